// compute.training_step's engines (compute/training_step.cpp): what one rank's step runs on, the
// CPU (OpenBLAS, MPI on host buffers, memcpy) or its GPU (the plugin's gemm, host_copy and
// device_copy operations, NCCL). Internal to compute/: only the training step includes it.
#pragma once

#include <memory>
#include <vector>

#include "collectives/collective.hpp"
#include "compute/training_model.hpp"
#include "core/context.hpp"

namespace clusterbench::compute {

/// What one rank's step runs on: the CPU (OpenBLAS, MPI on host buffers, memcpy) or its GPU (the
/// plugin's gemm, host_copy and device_copy operations, NCCL). Gradients are one buffer in layer
/// order; bucket k (backward order) covers layers first_layer(k) .. + buckets[k] - 1.
class Engine {
 public:
  explicit Engine(const TrainingConfig& c) : c_(c), buckets_(bucket_layers(c)) {}
  virtual ~Engine() = default;
  const std::vector<int>& buckets() const { return buckets_; }
  virtual int ranks() const = 0;
  virtual void forward_layer() = 0;
  /// The backward GEMMs of layer l (the CPU writes its weight gradients into the gradients).
  virtual void backward_layer(int l) = 0;
  /// Bucket k's collective: all_reduce (ZeRO-0) or reduce_scatter (ZeRO-2), in place, sum.
  /// Runs on the gradient thread during the step; nothing on one rank.
  virtual void reduce(size_t k) = 0;
  virtual void d2h() = 0;         ///< offload: the gradient shard to the host
  virtual void h2d() = 0;         ///< offload: the updated parameter shard back
  virtual void optimizer() = 0;   ///< Adam over this rank's parameters (ZeRO-2: its shard)
  virtual void all_gather() = 0;  ///< ZeRO-2: the updated parameters gathered
  /// Called on the gradient thread before its first collective (GPU: selects the rank's device).
  virtual void on_comm_thread() {}
  /// Parameters this rank's optimizer updates.
  long long shard() const { return c_.zero == 2 ? model_params(c_) / ranks() : model_params(c_); }

 protected:
  /// The first layer of bucket k.
  int first_layer(size_t k) const {
    int below = c_.layers;
    for (size_t j = 0; j <= k; ++j) below -= buckets_[j];
    return below;
  }
  /// Runs collective `coll` in place over `count` elements of `dt` at `data` on `be`.
  static void in_place(collectives::Backend* be, const collectives::Collective& coll,
                       collectives::Dtype dt, void* data, long long count) {
    const size_t size = collectives::dtype_size(dt);
    const auto l = coll.layout(count, be->rank(), be->size(), size);
    auto* base = static_cast<char*>(data);
    be->run(coll, dt, base + l.send_offset_inplace * size, base + l.recv_offset_inplace * size, l,
            0, true, 1);
  }
  TrainingConfig c_;
  std::vector<int> buckets_;
};

/// The CPU engine: OpenBLAS sgemm on the calling thread, MPI collectives on `be` (host buffers;
/// nullptr or one rank: none), the offload copies as memcpy.
std::unique_ptr<Engine> make_cpu_engine(const TrainingConfig& c, collectives::Backend* be);

/// The GPU engine on `device`: the plugin's operations; with more than one rank, NCCL with the
/// run's environment `nccl_env` (collectives::run_nccl_env). Throws CallError/Waived as the
/// plugin's operations do.
std::unique_ptr<Engine> make_gpu_engine(const TrainingConfig& c, const Context& ctx, int device,
                                        const json& nccl_env);

}  // namespace clusterbench::compute
