// The engines of compute.training_step (compute/training_engine.hpp): the layer GEMMs, the
// gradient collectives, the offload copies and the optimizer on the CPU or on this rank's GPU.
#include "compute/training_engine.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "compute/cpu_blas.hpp"
#include "core/error.hpp"
#include "core/gpu_case.hpp"
#include "core/gpu_disposition.hpp"
#include "gpu/operation.hpp"

namespace clusterbench::compute {
namespace {

/// The GEMMs of one layer on the calling thread (OpenBLAS sgemm, column-major NN), on inputs of
/// 1/64 (the values do not matter to the time; the weight gradients are real outputs).
class CpuLayer {
 public:
  explicit CpuLayer(const TrainingConfig& c) : fwd_(forward_gemms(c)), bwd_(backward_gemms(c)) {
    size_t a = 1, b = 1, out = 1;
    for (const auto* list : {&fwd_, &bwd_})
      for (const auto& g : *list) {
        a = std::max(a, static_cast<size_t>(g.shape.m * g.shape.k));
        b = std::max(b, static_cast<size_t>(g.shape.k * g.shape.n));
        out = std::max(out, static_cast<size_t>(g.shape.m * g.shape.n));
      }
    a_.assign(a, 1.0f / 64), b_.assign(b, 1.0f / 64), c_.assign(out, 0.0f);
  }
  void forward() {
    for (const auto& g : fwd_) run(g, c_.data());
  }
  /// Writes the layer's weight gradients (layer_params floats) from `grad`.
  void backward(float* grad) {
    for (const auto& g : bwd_) {
      run(g, g.weight_grad ? grad : c_.data());
      if (g.weight_grad) grad += g.shape.m * g.shape.n;
    }
  }

 private:
  void run(const LayerGemm& g, float* out) {
    const auto m = static_cast<int>(g.shape.m), n = static_cast<int>(g.shape.n),
               k = static_cast<int>(g.shape.k);
    for (long long i = 0; i < g.count; ++i)
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a_.data(), m, b_.data(),
                  k, 0.0f, out, m);
  }
  std::vector<LayerGemm> fwd_, bwd_;
  std::vector<float> a_, b_, c_;
};

/// Adam (Kingma & Ba 2015, beta1 0.9, beta2 0.999, eps 1e-8, lr 1e-4) over n parameters on the
/// calling thread, step `t` >= 1: the host optimizer of ZeRO-Offload.
void adam(float* p, const float* g, float* m, float* v, long long n, int t) {
  const float b1 = 0.9f, b2 = 0.999f, lr = 1e-4f, eps = 1e-8f;
  const float c1 = 1.0f - std::pow(b1, static_cast<float>(t)),
              c2 = 1.0f - std::pow(b2, static_cast<float>(t));
  for (long long i = 0; i < n; ++i) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    p[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + eps);
  }
}

/// Adam's host state over a shard of n parameters: parameters, gradient, m and v in fp32; with
/// fp16's dynamic loss scale (`scaled`), the gradients checked and unscaled first (a skipped
/// step updates nothing).
struct HostAdam {
  explicit HostAdam(long long n, bool scaled = false)
      : p(static_cast<size_t>(n), 0.01f),
        g(static_cast<size_t>(n), 0.0f),
        m(static_cast<size_t>(n), 0.0f),
        v(static_cast<size_t>(n), 0.0f),
        scaled(scaled) {}
  void step() {
    if (scaled && !scaler.unscale(g.data(), static_cast<long long>(g.size()))) return;
    adam(p.data(), g.data(), m.data(), v.data(), static_cast<long long>(p.size()), ++t);
  }
  std::vector<float> p, g, m, v;
  int t = 0;
  bool scaled = false;
  LossScaler scaler;
};

/// The CPU engine: OpenBLAS sgemm on the calling thread, MPI collectives on host buffers (quiet
/// waits, Backend::set_poll_sleep), the offload copies as memcpy.
class CpuEngine : public Engine {
 public:
  CpuEngine(const TrainingConfig& c, collectives::Backend* be)
      : Engine(c),
        be_(be && be->size() > 1 ? be : nullptr),
        layer_(c),
        grads_(static_cast<size_t>(model_params(c)), 0.0f),
        params_(static_cast<size_t>(model_params(c)), 0.01f),
        adam_(shard()) {}
  int ranks() const override { return be_ ? be_->size() : 1; }
  void forward_layer() override { layer_.forward(); }
  void backward_layer(int l) override { layer_.backward(grads_.data() + l * layer_params(c_)); }
  void reduce(size_t k) override {
    if (!be_) return;
    in_place(be_, c_.zero == 0 ? collectives::kAllReduce : collectives::kReduceScatter,
             collectives::Dtype::f32, grads_.data() + first_layer(k) * layer_params(c_),
             buckets_[k] * layer_params(c_));
  }
  void d2h() override { std::copy_n(grads_.data(), shard(), adam_.g.data()); }
  void h2d() override { std::copy_n(adam_.p.data(), shard(), params_.data()); }
  /// Without offload the "device" is this host: Adam reads the gradients in place.
  void optimizer() override {
    if (!c_.offload) std::copy_n(grads_.data(), shard(), adam_.g.data());
    adam_.step();
  }
  void all_gather() override {
    if (be_ && c_.zero == 2)
      in_place(be_, collectives::kAllGather, collectives::Dtype::f32, params_.data(),
               model_params(c_));
  }

 private:
  collectives::Backend* be_;
  CpuLayer layer_;
  std::vector<float> grads_, params_;
  HostAdam adam_;
};

/// The collective element type of a GEMM dtype (fp32 and tf32: float; bf16; fp16: half).
collectives::Dtype grad_dtype(const std::string& dtype) {
  if (dtype == "bf16") return collectives::Dtype::bf16;
  if (dtype == "fp16") return collectives::Dtype::f16;
  return collectives::Dtype::f32;
}

/// The GPU engine, on this rank's device: each distinct layer GEMM is one "gemm" operation of the
/// plugin (cuBLASLt, created and verified once, run back to back), the gradients and parameters
/// NCCL buffers reduced by the gradient thread on NCCL's own stream, the offload copies
/// "host_copy" operations (pinned), and Adam the host's (offload) or, on the device, a
/// "device_copy" of the same memory traffic (28 B a parameter: fp32 master, m, v read and written,
/// the gradient read). The GEMMs' outputs are the operations' own buffers: the reduced gradients
/// are a buffer of the gradients' size, not the GEMMs' results.
class GpuEngine : public Engine {
 public:
  /// `nccl_env`: the run's NCCL environment (collectives::run_nccl_env), shared with the
  /// collectives' communicator.
  GpuEngine(const TrainingConfig& c, const Context& ctx, int device, const json& nccl_env)
      : Engine(c), device_(device), adam_(1) {
    if (ctx.world_size() > 1) be_ = &collectives::nccl_backend(ctx, nccl_env, kNcclTimeoutS);
    add_gemms(forward_gemms(c), fwd_);
    add_gemms(backward_gemms(c), bwd_);
    const auto grad_bytes = static_cast<size_t>(model_params(c) * dtype_bytes(c.dtype));
    if (be_) grads_ = be_->alloc(grad_bytes), params_ = be_->alloc(grad_bytes);
    const long long n = shard();
    if (c.offload) {
      adam_ = HostAdam(n, c.loss_scale);
      // ZeRO-Offload's two pinned host buffers in the GPU dtype: the gradient shard comes down
      // into one, the updated parameters go up from the other. Each operation pins only the
      // buffer its copies touch, so no range is registered twice.
      const long long bytes = (n * dtype_bytes(c.dtype) + 15) / 16 * 16;
      host_grads_.assign(static_cast<size_t>(bytes), 0);
      host_params_.assign(static_cast<size_t>(bytes), 0);
      down_ = copy_op("d2h", bytes, host_params_.data(), host_grads_.data());
      up_ = copy_op("h2d", bytes, host_params_.data(), nullptr);
    } else {
      opt_ = gpu_call(kLibrary, [&] {
        return std::make_unique<gpu::Operation>(
            "device_copy", json{{"bytes", (n * 14 + 15) / 16 * 16}, {"method", "kernel"}});
      });
    }
  }
  ~GpuEngine() override {
    if (be_) be_->release(grads_), be_->release(params_);
  }
  int ranks() const override { return be_ ? be_->size() : 1; }
  void forward_layer() override { run_all(fwd_); }
  void backward_layer(int) override { run_all(bwd_); }
  void reduce(size_t k) override {
    if (!be_) return;
    const size_t elt = static_cast<size_t>(dtype_bytes(c_.dtype));
    in_place(be_, c_.zero == 0 ? collectives::kAllReduce : collectives::kReduceScatter,
             grad_dtype(c_.dtype),
             static_cast<char*>(grads_) + first_layer(k) * layer_params(c_) * elt,
             buckets_[k] * layer_params(c_));
  }
  void d2h() override { run_op(*down_, 1); }
  void h2d() override { run_op(*up_, 1); }
  void optimizer() override {
    if (c_.offload) return adam_.step();
    run_op(*opt_, 1);
  }
  void all_gather() override {
    if (be_ && c_.zero == 2)
      in_place(be_, collectives::kAllGather, grad_dtype(c_.dtype), params_, model_params(c_));
  }
  void on_comm_thread() override {
    const std::string err = select_gpu(device_);
    if (!err.empty())
      throw CallError("CUDA", "cudaSetDevice", err, "cudaSetDevice", "the gradient thread");
  }

 private:
  static constexpr const char* kLibrary = "cuBLASLt";
  static constexpr double kNcclTimeoutS = 600;
  struct Gemm {
    std::unique_ptr<gpu::Operation> op;
    long long count;
  };
  void add_gemms(const std::vector<LayerGemm>& list, std::vector<Gemm>& out) {
    for (const auto& g : list) {
      auto op = gpu_call(kLibrary, [&] {
        return std::make_unique<gpu::Operation>("gemm",
                                                gemm_op_params(c_.dtype, g.shape, 1, 16, 1));
      });
      out.push_back({std::move(op), g.count});
    }
  }
  /// A pinned "host_copy" of `bytes` from `src` (H2D; D2H's check reference) or into `dst`
  /// (D2H; nullptr for h2d).
  static std::unique_ptr<gpu::Operation> copy_op(const std::string& direction, long long bytes,
                                                 const void* src, void* dst) {
    json p = {{"bytes", bytes},
              {"direction", direction},
              {"pinned", true},
              {"host_src", reinterpret_cast<std::uintptr_t>(src)}};
    if (dst) p["host_dst"] = reinterpret_cast<std::uintptr_t>(dst);
    return gpu_call("CUDA", [&] { return std::make_unique<gpu::Operation>("host_copy", p); });
  }
  static void run_op(gpu::Operation& op, long long n) {
    gpu_call(kLibrary, [&] { return op.run(n); });
  }
  static void run_all(std::vector<Gemm>& list) {
    for (auto& g : list) run_op(*g.op, g.count);
  }
  int device_;
  collectives::Backend* be_ = nullptr;
  void* grads_ = nullptr;
  void* params_ = nullptr;
  std::vector<Gemm> fwd_, bwd_;
  std::vector<unsigned char> host_grads_, host_params_;
  std::unique_ptr<gpu::Operation> down_, up_, opt_;
  HostAdam adam_;
};

}  // namespace

std::unique_ptr<Engine> make_cpu_engine(const TrainingConfig& c, collectives::Backend* be) {
  return std::make_unique<CpuEngine>(c, be);
}

std::unique_ptr<Engine> make_gpu_engine(const TrainingConfig& c, const Context& ctx, int device,
                                        const json& nccl_env) {
  return std::make_unique<GpuEngine>(c, ctx, device, nccl_env);
}

}  // namespace clusterbench::compute
