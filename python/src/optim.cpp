// init_optim: the C++ AdamW (optim/adamw.h) that lazytrain.optim.AdamW drives,
// and the schedules' multipliers (optim/schedules.h) behind
// lazytrain.optim.lr_scheduler's get_*_schedule_with_warmup.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "optim/adamw.h"
#include "optim/schedules.h"

namespace lazytrain::python {

using namespace nb::literals;

void init_optim(nb::module_& m) {
  nb::class_<optim::AdamW>(m, "_AdamW", "optim/adamw.h: one learning rate, a weight decay per group")
      .def(
          "__init__",
          [](optim::AdamW* self, const std::vector<std::pair<std::vector<Tensor>, double>>& groups, double lr, double beta1,
             double beta2, double eps) {
            std::vector<optim::ParamGroup> param_groups;
            for (const auto& [params, weight_decay] : groups) param_groups.push_back({params, weight_decay});
            optim::AdamWOptions options;
            options.lr = lr;
            options.beta1 = beta1;
            options.beta2 = beta2;
            options.eps = eps;
            new (self) optim::AdamW(std::move(param_groups), options);
          },
          "groups"_a, "lr"_a, "beta1"_a, "beta2"_a, "eps"_a)
      .def("step", [](optim::AdamW& o) {
        PyOp op;
        o.step();
      })
      .def("zero_grad", &optim::AdamW::zero_grad)
      .def("set_lr", &optim::AdamW::set_lr, "lr"_a)
      .def_prop_ro("lr", &optim::AdamW::lr)
      .def_prop_ro("step_count", &optim::AdamW::step_count)
      .def("param_step", &optim::AdamW::param_step, "group"_a, "index"_a)
      .def("exp_avg", &optim::AdamW::exp_avg, "group"_a, "index"_a)
      .def("exp_avg_sq", &optim::AdamW::exp_avg_sq, "group"_a, "index"_a);
  m.def("_laid_out_like", &optim::laid_out_like, "moment"_a, "param"_a,
        "`moment` (a whole value of param's shape) laid out as `param` is (SPMD tiles), as AdamW's moments are.");
  m.def("_linear_schedule_with_warmup", &optim::linear_schedule_with_warmup, "step"_a, "warmup_steps"_a, "total_steps"_a);
  m.def("_cosine_schedule_with_warmup", &optim::cosine_schedule_with_warmup, "step"_a, "warmup_steps"_a, "total_steps"_a,
        "num_cycles"_a = 0.5);
  m.def("_constant_schedule_with_warmup", &optim::constant_schedule_with_warmup, "step"_a, "warmup_steps"_a);
}

}  // namespace lazytrain::python
