#include "lazy/device_context.h"

#include <map>
#include <utility>

namespace lazytrain::lazy {

void DeviceContext::set_failure(std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  failure_ = std::move(error);
}

std::exception_ptr DeviceContext::take_failure() {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return std::exchange(failure_, nullptr);
}

namespace {

struct Contexts {
  std::mutex mutex;
  std::map<runtime::Device, DeviceContext> by_device;  // (a map's elements stay where they are)
};

Contexts& contexts() {
  static Contexts all;
  return all;
}

}  // namespace

DeviceContext& device_context(const runtime::Device& device) {
  // A thread asks for one device over and over (every sync and launch): the
  // last answer is remembered, so the hot path takes no lock here.
  thread_local runtime::Device last_device;
  thread_local DeviceContext* last_context = nullptr;
  if (last_context && last_device == device) return *last_context;
  Contexts& all = contexts();
  std::lock_guard<std::mutex> lock(all.mutex);
  last_context = &all.by_device[device];
  last_device = device;
  return *last_context;
}

std::vector<runtime::Device> devices_with_context() {
  Contexts& all = contexts();
  std::lock_guard<std::mutex> lock(all.mutex);
  std::vector<runtime::Device> devices;
  devices.reserve(all.by_device.size());
  for (const auto& [device, context] : all.by_device) devices.push_back(device);
  return devices;
}

std::set<uint64_t>*& graph_recorder(const runtime::Device& device) {
  thread_local std::map<runtime::Device, std::set<uint64_t>*> recorders;
  return recorders[device];
}

}  // namespace lazytrain::lazy
