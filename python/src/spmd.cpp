// init_spmd: distributed/spmd.h (Mesh, mark_sharding, clear_sharding) and the
// replica count an SPMD mesh spans, under torch_xla's names
// (python/lazytrain/distributed/spmd.py and lazytrain/runtime.py wrap them).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "distributed/spmd.h"
#include "runtime/collectives.h"

namespace lazytrain::python {

using namespace nb::literals;

void init_spmd(nb::module_& m) {
  namespace s = distributed::spmd;
  nb::class_<s::Mesh>(m, "_Mesh")
      .def(
          "__init__",
          [](s::Mesh* self, std::vector<int64_t> ids, std::vector<int64_t> shape, std::vector<std::string> names) {
            PyOp op;  // errors name the user's line
            new (self) s::Mesh(std::move(ids), std::move(shape), std::move(names));
          },
          "device_ids"_a, "mesh_shape"_a, "axis_names"_a)
      .def_prop_ro("device_ids", &s::Mesh::device_ids)
      .def_prop_ro("mesh_shape", &s::Mesh::mesh_shape)
      .def_prop_ro("axis_names", &s::Mesh::axis_names)
      .def("axis_index", &s::Mesh::axis_index, "name"_a)
      .def("op_sharding", [](const s::Mesh& mesh, const s::PartitionSpec& spec) {
            PyOp op;
            return mesh.sharding(spec).to_string();
          }, "spec"_a,
           "The HLO text of the layout `spec` (one list of axis names per dimension) gives.");
  m.def(
      "_mark_sharding", [](Tensor t, const s::Mesh& mesh, const s::PartitionSpec& spec, const std::string& op_name) {
        PyOp op;
        return s::mark_sharding(std::move(t), mesh, spec, op_name);
      },
      "t"_a, "mesh"_a, "spec"_a, "op_name"_a = "");
  m.def("_fsdp_unit", &s::fsdp_unit, "name"_a);
  m.def(
      "_clear_sharding", [](Tensor t) {
        PyOp op;
        return s::clear_sharding(std::move(t));
      },
      "t"_a);
  m.def(
      "_get_xla_sharding_spec", [](const Tensor& t) {
        const hlo::HloSharding sharding = s::get_sharding(t);
        return sharding.is_replicated() ? std::string() : sharding.to_string();
      },
      "t"_a, "torch_xla's _get_xla_sharding_spec: the HLO text of t's layout, '' when it is whole on every device.");
  m.def("_use_spmd", &s::use_spmd, "local_devices"_a, "distributed::spmd::use_spmd: this process runs n devices, traced by one thread.");
  m.def("_reset_spmd", &s::reset_spmd, "One device, SPMD mode off (tests).");
  m.def("_set_local_devices", [](int n) { runtime::set_local_replicas(n); }, "n"_a, "The devices of this process (cpu:0 .. cpu:n-1).");
  m.def("_local_devices", [] { return runtime::replica_world().local_replicas; });
  m.def("_global_devices", [] { return runtime::replica_world().world_size(); });
}

}  // namespace lazytrain::python
