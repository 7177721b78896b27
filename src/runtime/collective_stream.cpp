#include "runtime/collective_stream.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "core/thread_name.h"

namespace lazytrain::runtime {

namespace {

// One device's queue and the thread that drains it. Never destroyed: a
// replica's execution may still wait on it while statics are torn down.
class CollectiveThread {
 public:
  explicit CollectiveThread(Device device) {
    std::thread([this, device] {
      set_thread_name("device " + device.to_string() + " collectives");
      DeviceGuard guard(device);
      run();
    }).detach();
  }

  std::future<Buffer> enqueue(std::function<Buffer()> exchange) {
    std::packaged_task<Buffer()> task(std::move(exchange));
    std::future<Buffer> result = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return result;
  }

 private:
  [[noreturn]] void run() {
    for (;;) {
      std::packaged_task<Buffer()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();  // an Error lands in the future; the captured operands are released here
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<Buffer()>> queue_;
};

CollectiveThread& thread_of(const Device& device) {
  static std::mutex mutex;
  static auto* threads = new std::map<Device, CollectiveThread*>();
  std::lock_guard<std::mutex> lock(mutex);
  CollectiveThread*& t = (*threads)[device];
  if (!t) t = new CollectiveThread(device);
  return *t;
}

}  // namespace

std::future<Buffer> start_collective(const Device& device, std::function<Buffer()> exchange) {
  return thread_of(device).enqueue(std::move(exchange));
}

}  // namespace lazytrain::runtime
