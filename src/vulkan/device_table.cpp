// volk's generated device-table loader, wrapped so that no global function pointer is defined.
#include "detail/context_state.hpp"

namespace membridge::vulkan::detail {

namespace {

struct loader_context {
  VkDevice device;
  PFN_vkGetDeviceProcAddr get_device_proc_addr;
};

PFN_vkVoidFunction load(void* context, const char* name) {
  const auto* c = static_cast<const loader_context*>(context);
  return c->get_device_proc_addr(c->device, name);
}

}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wcast-function-type"
void load_device_table(VolkDeviceTable& device_table, VkDevice device,
                       PFN_vkGetDeviceProcAddr get_device_proc_addr) noexcept {
  loader_context loader{device, get_device_proc_addr};
  VolkDeviceTable* table = &device_table;
  void* context = &loader;
#include "volk_device_table_load.inc"
}
#pragma GCC diagnostic pop

}  // namespace membridge::vulkan::detail
