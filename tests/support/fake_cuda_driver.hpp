// A scripted CUDA driver for unit tests: a driver_api table whose functions keep a model of handles,
// physical memory, reserved ranges, mappings, access and contexts; they check every call against the
// rules of the real driver (recording misuse instead of crashing), report leaks, and can be told to
// fail the n-th call or a named function.
#pragma once

#include <membridge/cuda/driver.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace membridge::testing {

class fake_cuda {
 public:
  /// One mapped piece of the address space.
  struct mapping_rec {
    CUdeviceptr address = 0;
    std::size_t size = 0;
    CUmemGenericAllocationHandle handle = 0;
    std::uint64_t physical_id = 0;
    int access = 0;  // CUmemAccess_flags of device 0
    std::map<int, int> peers;  // CUmemAccess_flags of other devices (location id -> flags), when granted
    friend bool operator==(const mapping_rec&, const mapping_rec&) = default;
  };
  /// Everything a test may compare before and after an operation.
  struct snapshot {
    std::map<CUmemGenericAllocationHandle, std::size_t> handles;  // live handle -> size
    std::map<CUdeviceptr, std::size_t> ranges;                    // reserved base -> size
    std::map<CUdeviceptr, mapping_rec> mappings;                  // mapped address -> record
    std::size_t free_memory = 0;
    friend bool operator==(const snapshot&, const snapshot&) = default;
  };

  /// Installs this instance as the one the table's functions use (one at a time per process).
  fake_cuda();
  /// Uninstalls it. Leaks and misuse are for the test to check before this runs.
  ~fake_cuda();
  fake_cuda(const fake_cuda&) = delete;
  fake_cuda& operator=(const fake_cuda&) = delete;

  // ------------------------------------------------------------------------ configuration ---
  int device_count = 1;
  std::string device_name = "Fake GPU";
  std::size_t granularity = std::size_t{2} << 20;
  std::size_t total_memory = std::size_t{80} << 30;
  std::size_t address_space = std::size_t{1} << 46;  // reservable bytes in all
  std::map<int, int> attributes;                     // CUdevice_attribute -> value (defaults: an H100)
  /// Compressible memory (asked for with allocFlags.compressionType; needs the device attribute
  /// CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, else cuMemCreate answers NOT_SUPPORTED):
  bool grants_compression = true;                         ///< false: such requests get plain memory
  CUresult compressible_shareable_create = CUDA_SUCCESS;  ///< cuMemCreate's answer for compressible + a handle type
  CUresult compressed_export = CUDA_SUCCESS;              ///< cuMemExportToShareableHandle's for compressed memory
  /// Peers (device_count > 1): (from, to) pairs for which cuDeviceCanAccessPeer says no; every
  /// other pair of different devices has access, native atomics (unless peer_native_atomics is
  /// false), CUDA array access and performance rank 0.
  std::set<std::pair<int, int>> no_peer_access;
  bool peer_native_atomics = true;

  /// The driver table, wrapped (from_table). Every function routes to the installed instance.
  [[nodiscard]] std::shared_ptr<const cuda::driver> driver() const;
  /// The raw table.
  [[nodiscard]] static cuda::driver_api table();

  // -------------------------------------------------------------------- failure injection ---
  /// The n-th counted call from now (0-based) returns `code`; only one injection is pending.
  void fail_nth_call(int n, CUresult code = CUDA_ERROR_OUT_OF_MEMORY);
  /// The `occurrence`-th call (1-based, from now) of `function` returns `code`.
  void fail_function(const std::string& function, CUresult code, int occurrence = 1);
  /// Clears pending injections.
  void clear_failures();
  /// Whether a pending injection fired since it was set.
  [[nodiscard]] bool injection_fired() const noexcept { return fired_; }
  /// The function the last injected failure hit.
  [[nodiscard]] const std::string& failed_function() const noexcept { return failed_function_; }
  /// Calls counted so far: every driver call except the error-name lookups and the teardown calls
  /// (cuCtxPopCurrent, cuMemUnmap, cuMemRelease, cuMemAddressFree, cuDevicePrimaryCtxRelease,
  /// cuDestroyExternalMemory, cuMipmappedArrayDestroy, cuSurfObjectDestroy, cuStreamDestroy, cuGraphDestroy,
  /// cuGraphExecDestroy, cuEventDestroy, cuMemFreeHost, cuStreamSynchronize).
  [[nodiscard]] int counted_calls() const noexcept { return counted_; }

  // --------------------------------------------------------------------------- inspection ---
  [[nodiscard]] snapshot state() const;
  /// Calls that broke a driver rule (wrong order, unknown handle, overlap...): must stay empty.
  [[nodiscard]] const std::vector<std::string>& misuse() const noexcept { return misuse_; }
  /// What is still alive (handles, ranges, mappings, context retains, pushed contexts, external
  /// semaphores and memory, mipmapped arrays, surface objects).
  [[nodiscard]] std::vector<std::string> leaks() const;
  /// Names of all calls (counted or not), in order.
  [[nodiscard]] const std::vector<std::string>& calls() const noexcept { return calls_; }
  /// How many times cuCtxSynchronize ran.
  [[nodiscard]] int synchronize_count() const noexcept { return syncs_; }
  /// The device whose primary context was current at each cuCtxSynchronize, in order.
  [[nodiscard]] const std::vector<int>& synchronized_devices() const noexcept { return synced_devices_; }
  /// Current primary-context retain count of device 0.
  [[nodiscard]] int primary_retains() const noexcept { return retains_; }

  // --------------------------------------------------- model (used by the table's functions) ---
  struct physical {
    std::size_t size = 0;
    int references = 0;  // handles + mappings
    CUmemAllocationProp prop{};  // as cuMemGetAllocationPropertiesFromHandle reports it (compression as granted)
    std::string security;        // Windows: the DACL (SDDL) of win32HandleMetaData, given to exported objects
  };
  struct handle_rec {
    std::uint64_t physical_id = 0;
    std::size_t size = 0;
  };
  /// Returns the injected failure for this call, if any, and records the call.
  std::optional<CUresult> enter_call(const char* function);
  void note_misuse(std::string what) { misuse_.push_back(std::move(what)); }
  bool context_current() const noexcept { return !context_stack_.empty() || current_ != nullptr; }
  void drop_reference(std::uint64_t physical_id);

  std::map<std::uint64_t, physical> physicals_;
  std::map<CUmemGenericAllocationHandle, handle_rec> handles_;
  std::map<CUdeviceptr, std::size_t> ranges_;
  std::map<CUdeviceptr, mapping_rec> mappings_;
  std::size_t free_memory_ = 0;
  std::size_t reserved_bytes_ = 0;
  std::uint64_t next_id_ = 1;
  CUdeviceptr next_address_ = 0x7f0000000000ULL;
  CUcontext current_ = nullptr;             // set by a test to pretend the runtime made it current
  std::vector<CUcontext> context_stack_;    // pushed by membridge
  int retains_ = 0;
  int syncs_ = 0;
  std::vector<int> synced_devices_;
  std::map<CUexternalSemaphore, std::uint64_t> semaphores_;  // imported semaphore -> last signalled value
  std::map<CUexternalSemaphore, void*> semaphore_counters_;    // -> the exporter's counter (fake_handles::map_timeline_counter)
  std::vector<std::uint64_t> waits_;                           // values waited for, in order

  /// An imported external memory object: it holds a reference to the physical memory its fd named.
  struct external_memory_rec {
    std::uint64_t physical_id = 0;
    std::size_t size = 0;
    bool dedicated = false;
  };
  /// A mipmapped array mapped from external memory, with the CUarray of its level 0.
  struct mipmapped_array_rec {
    CUexternalMemory memory = nullptr;
    CUarray level0 = nullptr;
    CUDA_ARRAY3D_DESCRIPTOR desc{};
    unsigned int levels = 0;
    std::size_t offset = 0;
  };
  std::map<CUexternalMemory, external_memory_rec> external_memories_;  // live imports
  std::map<CUmipmappedArray, mipmapped_array_rec> mipmapped_arrays_;   // live mapped arrays
  std::map<CUsurfObject, CUarray> surfaces_;                           // live surface -> its array

  // Streams and graphs (fake_cuda_graph.cpp). Graph nodes are kept in insertion order, which is a
  // topological order (a node depends only on nodes added before it).
  /// One node of a graph.
  struct graph_node_rec {
    CUgraph graph = nullptr;                               // the graph it belongs to
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    std::vector<CUgraphNode> dependencies;
    CUexternalSemaphore semaphore = nullptr;               // external-semaphore nodes
    std::uint64_t value = 0;                               // external-semaphore nodes
    CUgraph child = nullptr;                               // child-graph nodes: the clone they own
    std::string kernel;                                    // kernel nodes: the name the test gave
  };
  /// One graph: its nodes, and whether a child-graph node owns it (then it dies with that node).
  struct graph_rec {
    std::vector<CUgraphNode> nodes;
    bool owned_by_node = false;
  };
  /// One operation of a graph as it ran (or will run), flattened through child graphs.
  struct graph_op {
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;       // KERNEL, EXT_SEMAS_WAIT or EXT_SEMAS_SIGNAL
    CUexternalSemaphore semaphore = nullptr;
    std::uint64_t value = 0;
    std::string kernel;
    CUstream stream = nullptr;                             // set when it ran
    friend bool operator==(const graph_op&, const graph_op&) = default;
  };
  /// An executable graph: its template and its own copy of the operations, keyed by the template's
  /// top-level node (nullptr inside child graphs).
  struct exec_rec {
    CUgraph graph = nullptr;
    std::vector<std::pair<CUgraphNode, graph_op>> ops;
  };
  std::map<CUstream, CUgraph> streams_;                      // live streams -> graph being captured (or null)
  std::map<CUstream, bool> capture_invalidated_;            // captures a test invalidated
  std::map<CUgraph, graph_rec> graphs_;                      // live graphs (child clones too)
  std::map<CUgraphNode, graph_node_rec> nodes_;              // nodes of live graphs
  std::map<CUgraphExec, exec_rec> execs_;                    // live executable graphs
  std::vector<graph_op> executed_;                           // what graph launches ran, in order
  int graph_launches_ = 0;

  /// Stands in for a kernel launch of the CUDA runtime on `stream` (the test's recorded work): adds a
  /// kernel node named `name` to the stream's capture. Misuse when the stream is not capturing.
  void launch_kernel(CUstream stream, std::string name);
  /// Makes the capture on `stream` fail at cuStreamEndCapture (an unsupported call during capture).
  void invalidate_capture(CUstream stream) { capture_invalidated_[stream] = true; }
  // Events, stream waits, async copies and pinned host memory (fake_cuda_events.cpp).
  /// One operation enqueued on a stream: "record", "wait", "dtod", "dtoh", "htod" or "sync".
  struct stream_op {
    std::string what;
    CUstream stream = nullptr;
    CUevent event = nullptr;        // record, wait
    std::uint64_t dst = 0;          // copies (a host pointer as an integer for dtoh)
    std::uint64_t src = 0;          // copies (a host pointer as an integer for htod)
    std::size_t bytes = 0;          // copies
    friend bool operator==(const stream_op&, const stream_op&) = default;
  };
  std::set<CUevent> events_;                                  // live events
  std::set<CUevent> recorded_events_;                         // events recorded at least once
  std::map<std::uintptr_t, std::unique_ptr<std::byte[]>> host_blocks_;  // live pinned host memory
  std::map<std::uintptr_t, std::size_t> host_sizes_;          // its sizes
  std::vector<stream_op> stream_ops_;                         // what was enqueued, in order
  /// Fills the event, copy and host-memory entries of `t` (fake_cuda_events.cpp).
  static void fill_event_table(cuda::driver_api& t);
  /// Appends the leaks of the event and host-memory model to `out` (part of leaks()).
  void add_event_leaks(std::vector<std::string>& out) const;

  /// The installed instance (for the table's functions in other files).
  static fake_cuda& active() noexcept;
  /// Fills the stream and graph entries of `t` (fake_cuda_graph.cpp).
  static void fill_graph_table(cuda::driver_api& t);
  /// Appends the leaks of the stream and graph model to `out` (part of leaks()).
  void add_graph_leaks(std::vector<std::string>& out) const;
  /// The leaks of the stream and graph model alone.
  [[nodiscard]] std::vector<std::string> graph_leaks() const {
    std::vector<std::string> out;
    add_graph_leaks(out);
    return out;
  }

 private:
  std::vector<std::string> misuse_;
  std::vector<std::string> calls_;
  int counted_ = 0;
  int fail_at_ = -1;
  CUresult fail_code_ = CUDA_SUCCESS;
  std::string fail_function_;
  int fail_occurrence_ = 0;
  bool fired_ = false;
  std::string failed_function_;
};

/// The fake primary context handle of `device` (0 to 7; device 0 by default).
CUcontext fake_primary_context(int device = 0) noexcept;
/// The device whose fake primary context `ctx` is; -1 for any other handle.
int fake_context_device(CUcontext ctx) noexcept;

}  // namespace membridge::testing
