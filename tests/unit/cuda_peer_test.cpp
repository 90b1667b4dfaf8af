// cuda/peer.hpp on the scripted driver modelling two or three GPUs: the peer links, the matrix, the
// clear refusal naming both GPUs, and access for a set of GPUs on mapped memory (nothing changed on
// a refusal or a driver failure).
#include "fake_driver_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/address_range.hpp>
#include <membridge/cuda/mapping.hpp>
#include <membridge/cuda/peer.hpp>
#include <membridge/cuda/vmm_allocation.hpp>

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::access;
using membridge::cuda::address_range;
using membridge::cuda::device;
using membridge::cuda::device_access;
using membridge::cuda::mapping;
using membridge::cuda::vmm_allocation;

class peer_test : public membridge::testing::fake_driver_test {};

TEST_F(peer_test, a_link_reports_access_atomics_arrays_and_rank) {
  fake_.device_count = 2;
  fake_.peer_native_atomics = false;
  const device a = open_device(0);
  const device b = open_device(1);
  const auto link = membridge::cuda::query_peer(a, b);
  ASSERT_TRUE(link) << link.error().message();
  EXPECT_EQ(link->from, 0);
  EXPECT_EQ(link->to, 1);
  EXPECT_TRUE(link->access);
  EXPECT_FALSE(link->native_atomics);
  EXPECT_TRUE(link->array_access);
  EXPECT_EQ(link->performance_rank, 0);
}

TEST_F(peer_test, the_matrix_lists_every_ordered_pair_and_is_empty_with_one_gpu) {
  auto one = membridge::cuda::peer_matrix(*fake_.driver());
  ASSERT_TRUE(one) << one.error().message();
  EXPECT_TRUE(one->empty());

  fake_.device_count = 3;
  fake_.no_peer_access = {{2, 0}};
  auto m = membridge::cuda::peer_matrix(*fake_.driver());
  ASSERT_TRUE(m) << m.error().message();
  ASSERT_EQ(m->size(), 6U);
  const std::array<std::array<int, 2>, 6> order{{{0, 1}, {0, 2}, {1, 0}, {1, 2}, {2, 0}, {2, 1}}};
  for (std::size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ((*m)[i].from, order[i][0]) << i;
    EXPECT_EQ((*m)[i].to, order[i][1]) << i;
    const bool refused = order[i][0] == 2 && order[i][1] == 0;
    EXPECT_EQ((*m)[i].access, !refused) << i;
    EXPECT_EQ((*m)[i].native_atomics, !refused) << i;  // no attribute is read for a refused pair
  }
}

TEST_F(peer_test, a_driver_failure_in_the_matrix_names_the_call) {
  fake_.device_count = 2;
  fake_.fail_function("cuDeviceGetP2PAttribute", CUDA_ERROR_UNKNOWN);
  auto m = membridge::cuda::peer_matrix(*fake_.driver());
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message().find("cuDeviceGetP2PAttribute"), std::string::npos) << m.error().message();
}

TEST_F(peer_test, require_peer_access_names_both_gpus_when_there_is_none) {
  fake_.device_count = 2;
  fake_.no_peer_access = {{1, 0}};
  const device a = open_device(0);
  const device b = open_device(1);
  EXPECT_TRUE(membridge::cuda::require_peer_access(a, a));
  EXPECT_TRUE(membridge::cuda::require_peer_access(a, b));
  const auto refused = membridge::cuda::require_peer_access(b, a);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::unsupported);
  const std::string text = refused.error().message();
  EXPECT_NE(text.find("device 1"), std::string::npos) << text;
  EXPECT_NE(text.find("device 0"), std::string::npos) << text;
  EXPECT_NE(text.find("cuDeviceCanAccessPeer"), std::string::npos) << text;
  EXPECT_EQ(membridge::cuda::query_peer(a, a).error().code(), errc::invalid_argument);
  EXPECT_EQ(membridge::cuda::require_peer_access(device{}, a).error().code(), errc::invalid_argument);
}

TEST_F(peer_test, set_access_grants_each_gpu_its_rights_with_one_call) {
  fake_.device_count = 3;
  const device a = open_device(0);
  const device b = open_device(1);
  const device c = open_device(2);
  auto range = address_range::reserve(a, 8_MiB);
  ASSERT_TRUE(range) << range.error().message();
  auto memory = vmm_allocation::create(a, 4_MiB);
  ASSERT_TRUE(memory) << memory.error().message();
  auto mapped = mapping::map(*range, 0, *memory, access::read_write);
  ASSERT_TRUE(mapped) << mapped.error().message();

  const std::vector<device_access> grants{{&b, access::read_write}, {&c, access::read}};
  const int before = fake_.counted_calls();
  ASSERT_TRUE(membridge::cuda::set_access(a, mapped->address(), mapped->size(), grants));
  const auto calls = fake_.calls();
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "cuMemSetAccess"), 2) << "map's and set_access's";
  EXPECT_GT(fake_.counted_calls(), before);
  const auto rec = fake_.state().mappings.at(mapped->address());
  EXPECT_EQ(rec.access, CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << "the owner's rights unchanged";
  EXPECT_EQ(rec.peers.at(1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(rec.peers.at(2), CU_MEM_ACCESS_FLAGS_PROT_READ);
}

TEST_F(peer_test, set_access_refuses_a_gpu_without_peer_access_and_changes_nothing) {
  fake_.device_count = 3;
  fake_.no_peer_access = {{2, 0}};
  const device a = open_device(0);
  const device b = open_device(1);
  const device c = open_device(2);
  auto range = address_range::reserve(a, 4_MiB);
  ASSERT_TRUE(range);
  auto memory = vmm_allocation::create(a, 2_MiB);
  ASSERT_TRUE(memory);
  auto mapped = mapping::map(*range, 0, *memory, access::read_write);
  ASSERT_TRUE(mapped);
  const auto before = fake_.state();
  const std::vector<device_access> grants{{&b, access::read}, {&c, access::read}};
  const auto refused = membridge::cuda::set_access(a, mapped->address(), mapped->size(), grants);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::unsupported);
  EXPECT_NE(refused.error().message().find("device 2"), std::string::npos) << refused.error().message();
  EXPECT_EQ(fake_.state(), before) << "no rights changed";

  // A driver failure of the one cuMemSetAccess leaves the rights as they were too.
  fake_.fail_function("cuMemSetAccess", CUDA_ERROR_OUT_OF_MEMORY);
  const std::vector<device_access> one{{&b, access::read}};
  const auto failed = membridge::cuda::set_access(a, mapped->address(), mapped->size(), one);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message().find("cuMemSetAccess"), std::string::npos);
  EXPECT_EQ(fake_.state(), before);
}

TEST_F(peer_test, set_access_refuses_bad_arguments_before_any_driver_call) {
  fake_.device_count = 2;
  const device a = open_device(0);
  const device b = open_device(1);
  const int before = fake_.counted_calls();
  const std::vector<device_access> twice{{&b, access::read}, {&b, access::read_write}};
  const std::vector<device_access> null{{nullptr, access::read}};
  const std::vector<device_access> one{{&b, access::read}};
  EXPECT_EQ(membridge::cuda::set_access(a, 0x1000, 2_MiB, {}).error().code(), errc::invalid_argument);
  EXPECT_EQ(membridge::cuda::set_access(a, 0x1000, 2_MiB, null).error().code(), errc::invalid_argument);
  EXPECT_EQ(membridge::cuda::set_access(a, 0, 2_MiB, one).error().code(), errc::invalid_argument);
  EXPECT_EQ(membridge::cuda::set_access(a, 0x1000, 0, one).error().code(), errc::invalid_argument);
  EXPECT_EQ(membridge::cuda::set_access(device{}, 0x1000, 2_MiB, one).error().code(), errc::invalid_argument);
  const auto dup = membridge::cuda::set_access(a, 0x1000, 2_MiB, twice);
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message().find("named twice"), std::string::npos);
  // The duplicate check runs before the second device's peer query; the first grant's query ran.
  EXPECT_LE(fake_.counted_calls() - before, 4);
}

}  // namespace
