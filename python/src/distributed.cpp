// init_distributed: distributed/xla_model.h under torch_xla.core.xla_model's
// names (python/lazytrain/core/xla_model.py wraps them). Host meetings release
// the GIL while they wait for the other replicas.
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "distributed/spawn.h"
#include "distributed/xla_model.h"

namespace lazytrain::python {

using namespace nb::literals;

void init_distributed(nb::module_& m) {
  namespace d = distributed;
  nb::enum_<d::ReduceType>(m, "ReduceType")
      .value("SUM", d::ReduceType::kSum)
      .value("MUL", d::ReduceType::kMul)
      .value("MIN", d::ReduceType::kMin)
      .value("MAX", d::ReduceType::kMax);
  m.def(
      "_spawn",
      [](nb::object fn, int nprocs, double collective_timeout, int threads_per_replica) {
        d::SpawnOptions options;
        options.collective_timeout = collective_timeout;
        options.threads_per_replica = threads_per_replica;
        GilRelease release;
        // Each replica thread takes the GIL to run Python and gives it up in
        // every wait (sync, reads, meetings), so the replicas trace in turn
        // and execute side by side.
        d::spawn(
            [&fn](int index) {
              GilAcquire gil;
              fn(index);
            },
            nprocs, options);
      },
      "fn"_a, "nprocs"_a, "collective_timeout"_a = 300.0, "threads_per_replica"_a = 0,
      "distributed::spawn: fn(i) on nprocs replica threads, device cpu:i current on thread i; the first error raised is "
      "re-raised after all have stopped.");
  m.def("_world_size", &d::world_size);
  m.def("_ordinal", &d::ordinal);
  m.def("_local_ordinal", &d::local_ordinal);
  m.def("_is_master_ordinal", &d::is_master_ordinal, "local"_a = true);
  m.def("_master_print", &d::master_print, "text"_a);
  m.def(
      "_rendezvous", [](const std::string& tag) {
        GilRelease release;
        d::rendezvous(tag);
      },
      "tag"_a);
  m.def(
      "_mesh_reduce_sum", [](const std::string& tag, double value) {
        GilRelease release;
        return d::mesh_reduce(tag, value, [](const std::vector<double>& v) {
          double s = 0;
          for (double x : v) s += x;
          return s;
        });
      },
      "tag"_a, "value"_a);
  m.def(
      "_mesh_gather", [](const std::string& tag, double value) {
        // Every replica's value in ordinal order, through mesh_reduce's meeting.
        std::vector<double> all;
        GilRelease release;
        d::mesh_reduce(tag, value, [&all](const std::vector<double>& v) {
          all = v;
          return 0.0;
        });
        return all;
      },
      "tag"_a, "value"_a);
  m.def(
      "all_reduce", [](d::ReduceType type, const Tensor& x, double scale) {
        PyOp op;
        return d::all_reduce(type, x, scale);
      },
      "reduce_type"_a, "input"_a, "scale"_a = 1.0);
  m.def(
      "_all_reduce_list", [](d::ReduceType type, const std::vector<Tensor>& xs, double scale) {
        PyOp op;
        return d::all_reduce(type, xs, scale);
      },
      "reduce_type"_a, "inputs"_a, "scale"_a);
  m.def(
      "all_gather", [](const Tensor& x, int64_t dim) {
        PyOp op;
        return d::all_gather(x, dim);
      },
      "input"_a, "dim"_a = 0);
  m.def(
      "_reduce_gradients", [](const std::vector<Tensor>& params) {
        PyWait wait;  // the replicas meet on the host: the others need the GIL to get there
        d::reduce_gradients(params);
      },
      "params"_a,
      "distributed::reduce_gradients: each grad becomes its mean over the replicas (zeros where a replica has none).");
  m.def(
      "_optimizer_step_adamw", [](optim::AdamW& optimizer) {
        PyWait wait;  // reduce_gradients' host meeting
        d::optimizer_step(optimizer);
      },
      "optimizer"_a);
}

}  // namespace lazytrain::python
