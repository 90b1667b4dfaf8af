// The scripted driver's streams, stream capture and graphs: enough of the real driver's rules for
// sync::producer_graph (capture into a graph, external-semaphore nodes, child graphs, instantiation,
// per-launch node values, launches), checked call by call; a launch "runs" the executable graph's
// operations in order against the semaphore model (waits recorded, signals must grow).
#include "fake_cuda_common.hpp"
#include "fake_cuda_driver.hpp"

#include <string>
#include <utility>

namespace membridge::testing {

namespace {

fake_cuda& active() { return fake_cuda::active(); }

using fake_detail::hex;

template <class T>
std::string hex_of(T* p) {
  return hex(reinterpret_cast<std::uintptr_t>(p));
}

template <class T>
T* new_handle() {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(active().next_id_++));
}

// Adds a node to a live graph after checking its dependencies belong to it.
CUresult add_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, std::size_t count,
                  fake_cuda::graph_node_rec rec, const char* call) {
  auto& f = active();
  const auto g = f.graphs_.find(graph);
  if (out == nullptr || g == f.graphs_.end()) {
    f.note_misuse(std::string(call) + " on an unknown graph or with a null output");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (count > 0 && deps == nullptr) {
    f.note_misuse(std::string(call) + " with dependencies but a null array");
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (std::size_t i = 0; i < count; ++i) {
    const auto d = f.nodes_.find(deps[i]);
    if (d == f.nodes_.end() || d->second.graph != graph) {
      f.note_misuse(std::string(call) + " depends on a node of another graph (or no node)");
      return CUDA_ERROR_INVALID_VALUE;
    }
    rec.dependencies.push_back(deps[i]);
  }
  rec.graph = graph;
  const auto node = new_handle<CUgraphNode_st>();
  f.nodes_[node] = std::move(rec);
  g->second.nodes.push_back(node);
  *out = node;
  return CUDA_SUCCESS;
}

// A deep copy of `source` (a child-graph node's clone).
CUgraph clone_graph(CUgraph source) {
  auto& f = active();
  const auto copy = new_handle<CUgraph_st>();
  f.graphs_[copy] = {{}, true};
  std::map<CUgraphNode, CUgraphNode> renamed;
  for (const CUgraphNode n : f.graphs_[source].nodes) {
    fake_cuda::graph_node_rec rec = f.nodes_[n];
    rec.graph = copy;
    for (auto& d : rec.dependencies) d = renamed[d];
    if (rec.child != nullptr) rec.child = clone_graph(rec.child);
    const auto node = new_handle<CUgraphNode_st>();
    f.nodes_[node] = std::move(rec);
    f.graphs_[copy].nodes.push_back(node);
    renamed[n] = node;
  }
  return copy;
}

void destroy_graph(CUgraph graph) {
  auto& f = active();
  const auto g = f.graphs_.find(graph);
  if (g == f.graphs_.end()) return;
  const std::vector<CUgraphNode> nodes = g->second.nodes;
  f.graphs_.erase(g);
  for (const CUgraphNode n : nodes) {
    const CUgraph child = f.nodes_[n].child;
    f.nodes_.erase(n);
    if (child != nullptr) destroy_graph(child);
  }
}

// The operations of `graph` in order, child graphs flattened; top-level nodes keep their handle.
void flatten(CUgraph graph, bool top, std::vector<std::pair<CUgraphNode, fake_cuda::graph_op>>& out) {
  auto& f = active();
  for (const CUgraphNode n : f.graphs_[graph].nodes) {
    const auto& rec = f.nodes_[n];
    if (rec.type == CU_GRAPH_NODE_TYPE_GRAPH) {
      flatten(rec.child, false, out);
      continue;
    }
    out.emplace_back(top ? n : nullptr, fake_cuda::graph_op{rec.type, rec.semaphore, rec.value, rec.kernel, nullptr});
  }
}

CUresult fake_cuStreamCreate(CUstream* out, unsigned int flags) {
  FAKE_ENTER("cuStreamCreate");
  FAKE_REQUIRE_CONTEXT("cuStreamCreate");
  auto& f = active();
  if (out == nullptr || (flags & ~static_cast<unsigned int>(CU_STREAM_NON_BLOCKING)) != 0) {
    f.note_misuse("cuStreamCreate with a null output or unknown flags");
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto stream = new_handle<CUstream_st>();
  f.streams_[stream] = nullptr;
  *out = stream;
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamDestroy(CUstream stream) {
  FAKE_ENTER("cuStreamDestroy");
  auto& f = active();
  const auto s = f.streams_.find(stream);
  if (s == f.streams_.end()) {
    f.note_misuse("cuStreamDestroy of an unknown or destroyed stream");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (s->second != nullptr) f.note_misuse("cuStreamDestroy while the stream is capturing");
  f.streams_.erase(s);
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
  FAKE_ENTER("cuStreamBeginCapture");
  FAKE_REQUIRE_CONTEXT("cuStreamBeginCapture");
  auto& f = active();
  const auto s = f.streams_.find(stream);
  if (s == f.streams_.end()) {
    f.note_misuse("cuStreamBeginCapture on an unknown stream (the legacy default stream cannot capture)");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  if (s->second != nullptr) {
    f.note_misuse("cuStreamBeginCapture on a stream that is already capturing");
    return CUDA_ERROR_ILLEGAL_STATE;
  }
  const auto graph = new_handle<CUgraph_st>();
  f.graphs_[graph] = {};
  s->second = graph;
  f.capture_invalidated_.erase(stream);
  return CUDA_SUCCESS;
}

// On the capturing thread, the real driver ends the capture whatever it answers: on failure (an
// invalidated capture, or an injected failure here) there is no graph and the stream is usable.
CUresult fake_cuStreamEndCapture(CUstream stream, CUgraph* out) {
  const auto injected = active().enter_call("cuStreamEndCapture");
  FAKE_REQUIRE_CONTEXT("cuStreamEndCapture");
  auto& f = active();
  const auto s = f.streams_.find(stream);
  if (s == f.streams_.end() || s->second == nullptr || out == nullptr) {
    f.note_misuse("cuStreamEndCapture on a stream that is not capturing (or a null output)");
    return injected.value_or(CUDA_ERROR_ILLEGAL_STATE);
  }
  const CUgraph graph = std::exchange(s->second, nullptr);
  const bool invalidated = f.capture_invalidated_.erase(stream) > 0;
  if (injected || invalidated) {
    destroy_graph(graph);
    *out = nullptr;
    return injected.value_or(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  }
  *out = graph;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphCreate(CUgraph* out, unsigned int flags) {
  FAKE_ENTER("cuGraphCreate");
  auto& f = active();
  if (out == nullptr || flags != 0) {
    f.note_misuse("cuGraphCreate with a null output or flags other than 0");
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto graph = new_handle<CUgraph_st>();
  f.graphs_[graph] = {};
  *out = graph;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphDestroy(CUgraph graph) {
  FAKE_ENTER("cuGraphDestroy");
  auto& f = active();
  const auto g = f.graphs_.find(graph);
  if (g == f.graphs_.end() || g->second.owned_by_node) {
    f.note_misuse("cuGraphDestroy of an unknown or destroyed graph (or a child-graph node's clone)");
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (const auto& [stream, capturing] : f.streams_)
    if (capturing == graph) f.note_misuse("cuGraphDestroy of a graph still being captured");
  destroy_graph(graph);
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphAddChildGraphNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, std::size_t count,
                                       CUgraph child) {
  FAKE_ENTER("cuGraphAddChildGraphNode");
  auto& f = active();
  if (f.graphs_.count(child) == 0 || child == graph) {
    f.note_misuse("cuGraphAddChildGraphNode of an unknown graph (or of the graph itself)");
    return CUDA_ERROR_INVALID_VALUE;
  }
  fake_cuda::graph_node_rec rec;
  rec.type = CU_GRAPH_NODE_TYPE_GRAPH;
  rec.child = clone_graph(child);
  const CUgraph clone = rec.child;
  const CUresult rc = add_node(out, graph, deps, count, std::move(rec), "cuGraphAddChildGraphNode");
  if (rc != CUDA_SUCCESS) destroy_graph(clone);
  return rc;
}

// The one semaphore of a node's parameters (membridge uses one per node), checked.
template <class Params>
bool one_semaphore(const Params* params, const char* call, CUexternalSemaphore& semaphore, std::uint64_t& value) {
  auto& f = active();
  if (params == nullptr || params->numExtSems != 1 || params->extSemArray == nullptr || params->paramsArray == nullptr) {
    f.note_misuse(std::string(call) + ": parameters other than one semaphore");
    return false;
  }
  if (f.semaphores_.count(params->extSemArray[0]) == 0) {
    f.note_misuse(std::string(call) + " names an unknown or destroyed semaphore");
    return false;
  }
  semaphore = params->extSemArray[0];
  value = params->paramsArray[0].params.fence.value;
  return true;
}

// A node of type `type` waiting on or signalling the one semaphore in `params` (call: the driver
// function's name).
template <class Params>
CUresult add_semaphore_node(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, std::size_t count,
                            const Params* params, CUgraphNodeType type, const char* call) {
  FAKE_ENTER(call);
  FAKE_REQUIRE_CONTEXT(call);
  fake_cuda::graph_node_rec rec;
  rec.type = type;
  if (!one_semaphore(params, call, rec.semaphore, rec.value)) return CUDA_ERROR_INVALID_VALUE;
  return add_node(out, graph, deps, count, std::move(rec), call);
}

CUresult fake_cuGraphAddExternalSemaphoresWaitNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps,
                                                   std::size_t count, const CUDA_EXT_SEM_WAIT_NODE_PARAMS* params) {
  return add_semaphore_node(out, graph, deps, count, params, CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT,
                            "cuGraphAddExternalSemaphoresWaitNode");
}

CUresult fake_cuGraphAddExternalSemaphoresSignalNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps,
                                                     std::size_t count, const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* params) {
  return add_semaphore_node(out, graph, deps, count, params, CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL,
                            "cuGraphAddExternalSemaphoresSignalNode");
}

CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec* out, CUgraph graph, unsigned long long flags) {
  FAKE_ENTER("cuGraphInstantiateWithFlags");
  FAKE_REQUIRE_CONTEXT("cuGraphInstantiateWithFlags");
  auto& f = active();
  if (out == nullptr || f.graphs_.count(graph) == 0 || flags != 0) {
    f.note_misuse("cuGraphInstantiateWithFlags of an unknown graph, with flags or a null output");
    return CUDA_ERROR_INVALID_VALUE;
  }
  fake_cuda::exec_rec rec;
  rec.graph = graph;
  flatten(graph, true, rec.ops);
  const auto exec = new_handle<CUgraphExec_st>();
  f.execs_[exec] = std::move(rec);
  *out = exec;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphExecDestroy(CUgraphExec exec) {
  FAKE_ENTER("cuGraphExecDestroy");
  auto& f = active();
  if (!fake_detail::forget(f.execs_, exec, "cuGraphExecDestroy of an unknown or destroyed executable graph"))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// A top-level node of `exec`'s template of type `type`, or null (misuse noted).
fake_cuda::graph_op* exec_op(CUgraphExec exec, CUgraphNode node, CUgraphNodeType type, const char* call) {
  auto& f = active();
  const auto e = f.execs_.find(exec);
  if (e == f.execs_.end()) {
    f.note_misuse(std::string(call) + " on an unknown executable graph");
    return nullptr;
  }
  const auto n = f.nodes_.find(node);
  if (n == f.nodes_.end() || n->second.graph != e->second.graph || n->second.type != type) {
    f.note_misuse(std::string(call) + " names a node that is not one of its template's (or of another type)");
    return nullptr;
  }
  for (auto& [key, op] : e->second.ops)
    if (key == node) return &op;
  f.note_misuse(std::string(call) + " names a node added after instantiation");
  return nullptr;
}

// Sets the semaphore value of node `node` (of type `type`) in `exec` from `params` (call: the driver
// function's name).
template <class Params>
CUresult set_semaphore_node(CUgraphExec exec, CUgraphNode node, const Params* params, CUgraphNodeType type,
                            const char* call) {
  FAKE_ENTER(call);
  FAKE_REQUIRE_CONTEXT(call);
  fake_cuda::graph_op* op = exec_op(exec, node, type, call);
  if (op == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!one_semaphore(params, call, op->semaphore, op->value)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphExecExternalSemaphoresWaitNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                             const CUDA_EXT_SEM_WAIT_NODE_PARAMS* params) {
  return set_semaphore_node(exec, node, params, CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT,
                            "cuGraphExecExternalSemaphoresWaitNodeSetParams");
}

CUresult fake_cuGraphExecExternalSemaphoresSignalNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                               const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* params) {
  return set_semaphore_node(exec, node, params, CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL,
                            "cuGraphExecExternalSemaphoresSignalNodeSetParams");
}

CUresult fake_cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  FAKE_ENTER("cuGraphLaunch");
  FAKE_REQUIRE_CONTEXT("cuGraphLaunch");
  auto& f = active();
  const auto e = f.execs_.find(exec);
  if (e == f.execs_.end()) {
    f.note_misuse("cuGraphLaunch of an unknown or destroyed executable graph");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (stream != nullptr) {
    const auto s = f.streams_.find(stream);
    if (s != f.streams_.end() && s->second != nullptr) f.note_misuse("cuGraphLaunch into a capturing stream");
  }
  ++f.graph_launches_;
  for (const auto& [node, planned] : e->second.ops) {
    fake_cuda::graph_op op = planned;
    op.stream = stream;
    if (op.type != CU_GRAPH_NODE_TYPE_KERNEL) {
      const auto s = f.semaphores_.find(op.semaphore);
      if (s == f.semaphores_.end()) {
        f.note_misuse("cuGraphLaunch of a graph whose semaphore was destroyed");
        return CUDA_ERROR_INVALID_HANDLE;
      }
      if (op.type == CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT) f.waits_.push_back(op.value);
      if (op.type == CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL) {
        if (op.value <= s->second) f.note_misuse("timeline signalled with a value that does not grow");
        s->second = op.value;
      }
    }
    f.executed_.push_back(std::move(op));
  }
  return CUDA_SUCCESS;
}

}  // namespace

void fake_cuda::launch_kernel(CUstream stream, std::string name) {
  const auto s = streams_.find(stream);
  if (s == streams_.end() || s->second == nullptr) {
    note_misuse("kernel " + name + " launched on a stream that is not capturing (the test expects capture)");
    return;
  }
  graph_node_rec rec;
  rec.type = CU_GRAPH_NODE_TYPE_KERNEL;
  rec.kernel = std::move(name);
  // Stream order: the new node depends on the last node captured.
  auto& nodes = graphs_[s->second].nodes;
  if (!nodes.empty()) rec.dependencies.push_back(nodes.back());
  rec.graph = s->second;
  const auto node = reinterpret_cast<CUgraphNode>(static_cast<std::uintptr_t>(next_id_++));
  nodes_[node] = std::move(rec);
  nodes.push_back(node);
}

void fake_cuda::add_graph_leaks(std::vector<std::string>& out) const {
  for (const auto& [stream, capturing] : streams_)
    out.push_back("stream " + hex_of(stream) + (capturing != nullptr ? " (still capturing)" : ""));
  for (const auto& [graph, rec] : graphs_)
    if (!rec.owned_by_node) out.push_back("graph " + hex_of(graph) + " (" + std::to_string(rec.nodes.size()) + " nodes)");
  for (const auto& [exec, rec] : execs_) out.push_back("executable graph " + hex_of(exec));
}

void fake_cuda::fill_graph_table(cuda::driver_api& t) {
  FAKE_FILL(t, cuStreamCreate);
  FAKE_FILL(t, cuStreamDestroy);
  FAKE_FILL(t, cuStreamBeginCapture);
  FAKE_FILL(t, cuStreamEndCapture);
  FAKE_FILL(t, cuGraphCreate);
  FAKE_FILL(t, cuGraphDestroy);
  FAKE_FILL(t, cuGraphAddChildGraphNode);
  FAKE_FILL(t, cuGraphAddExternalSemaphoresWaitNode);
  FAKE_FILL(t, cuGraphAddExternalSemaphoresSignalNode);
  FAKE_FILL(t, cuGraphInstantiateWithFlags);
  FAKE_FILL(t, cuGraphExecDestroy);
  FAKE_FILL(t, cuGraphExecExternalSemaphoresWaitNodeSetParams);
  FAKE_FILL(t, cuGraphExecExternalSemaphoresSignalNodeSetParams);
  FAKE_FILL(t, cuGraphLaunch);
}

}  // namespace membridge::testing
