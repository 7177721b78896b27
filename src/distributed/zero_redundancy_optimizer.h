// ZeroRedundancyAdamW: AdamW with its state sharded over the replicas
// (torch.distributed.optim.ZeroRedundancyOptimizer; ZeRO stage 1, the
// optimizer-state half of FSDP). Each parameter is flattened and padded to a
// multiple of the world size W; replica r owns elements [r*s, (r+1)*s), s =
// ceil(numel / W), and keeps the AdamW moments of that shard alone (about 1/W
// of AdamW's state). One step, traced into the step's graph:
//   1. each gradient is reduce-scattered: the replica gets the mean over the
//      replicas of its shard (HLO reduce-scatter, scale 1/W);
//   2. with max_grad_norm > 0 the shards are clipped by the global L2 norm
//      (the replicas' squared sums all-reduced; torch's clip_grad_norm_ rule:
//      coefficient min(1, max_norm / (norm + 1e-6)));
//   3. AdamW updates the shard (the same arithmetic as AdamW::step);
//   4. the updated shards are all-gathered into the full parameter.
// Without clipping this gives the unsharded data-parallel update bit for bit
// (the reduce-scatter sums as the all-reduce does); with clipping, the norm is
// summed in another order.
//
// Checkpoints hold the full moments, as AdamW's: state_dict() all-gathers them
// (every replica must call it: it runs collectives), load_state_dict() keeps
// each replica's shard of them. One reduce-scatter and one all-gather per
// parameter (not bucketed).
#pragma once

#include "optim/adamw.h"

namespace lazytrain::distributed {

class ZeroRedundancyAdamW : public optim::AdamW {
 public:
  // The replicas are those of distributed::world_size(), this one
  // distributed::ordinal(), fixed at construction. Error as AdamW's, or for
  // max_grad_norm < 0.
  ZeroRedundancyAdamW(std::vector<optim::ParamGroup> groups, optim::AdamWOptions options, double max_grad_norm = 0.0);

  // Steps 1-4 above for every parameter with a grad(); the grads are the
  // replica's own (do not reduce_gradients or clip before).
  void step() override;
  // The global gradient norm of the last step (before clipping; 0-d, lazy);
  // undefined without clipping.
  const Tensor& grad_norm() const { return grad_norm_; }
  optim::AdamWStateDict state_dict(const optim::NamedTensors& names) const override;
  void load_state_dict(const optim::AdamWStateDict& state_dict, const optim::NamedTensors& names) override;

  int64_t num_shards() const { return world_; }

 private:
  int64_t shard_size(const Tensor& param) const { return (param.numel() + world_ - 1) / world_; }
  // This replica's shard of `full` (flattened and padded).
  Tensor shard_of(const Tensor& full) const;
  // The full tensor of `shape` from every replica's shard.
  Tensor gather(const Tensor& shard, const Shape& shape) const;

  int64_t world_ = 1, rank_ = 0;
  double max_grad_norm_ = 0.0;
  Tensor grad_norm_;
};

}  // namespace lazytrain::distributed
