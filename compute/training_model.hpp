// The arithmetic of compute.training_step (docs/training.md; formulas: docs/metrics.md "Training
// step"): the synthetic data-parallel transformer's shapes, parameter and FLOP counts, its
// gradient buckets, and the prediction of one optimizer step from the parts measured alone.
// Pure functions: no clocks, no I/O; tests/unit/test_training_model.cpp checks them by hand.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compute/gemm.hpp"

namespace clusterbench::compute {

/// One training configuration (`--set compute.training_step.KEY`). Tokens of a micro-step:
/// T = micro_batch x seq. One loader batch (micro_batch sequences of `seq` int32 tokens) feeds
/// one micro-step; the seed's batch 32 is micro_batch x accum per optimizer step.
struct TrainingConfig {
  std::string preset;  ///< "7b" or "ci"
  int layers = 0, hidden = 0, ffn = 0, heads = 0, seq = 0, micro_batch = 0;
  int accum = 1;                  ///< gradient-accumulation steps per optimizer step
  std::string dtype;              ///< GEMM dtype: "fp32" on CPUs (OpenBLAS), "bf16" on GPUs
  int zero = 0;                   ///< ZeRO stage: 0 (all_reduce) or 2 (reduce_scatter + all_gather)
  bool offload = false;           ///< ZeRO-2's optimizer on the host (D2H, host Adam, H2D)
  long long bucket_bytes = 0;     ///< gradient bucket size (DDP's bucket_cap_mb)
  int workers = 1, prefetch = 2;  ///< the loader's (PyTorch num_workers, prefetch_factor)
  /// fp16's dynamic loss scale (DeepSpeed's: initial 2^16, doubled after kLossScaleWindow steps
  /// without overflow, halved and the step skipped on one): the host optimizer checks the
  /// gradient shard for inf/NaN and unscales it before Adam. Needs fp16 and offload.
  bool loss_scale = false;
};

/// The dynamic loss scale's initial value and growth window (the guide's fp16 settings).
inline constexpr double kLossScaleInitial = 65536;
inline constexpr int kLossScaleWindow = 1000;

/// fp16's dynamic loss scale over the gradients Adam reads: `unscale` checks them for inf/NaN
/// (one read pass) and, when all are finite, multiplies them by 1 / scale (one read-write pass);
/// an overflow skips the step and halves the scale, kLossScaleWindow clean steps double it.
struct LossScaler {
  double scale = kLossScaleInitial;
  int clean = 0;          ///< steps since the last overflow or growth
  long long skipped = 0;  ///< steps skipped on an overflow
  /// Checks and unscales g[0..n); false when the step must be skipped (an inf or NaN).
  bool unscale(float* g, long long n);
};

/// The presets: "7b" (32 layers, hidden 4096, FFN 16384, 32 heads, seq 2048, micro-batch 32,
/// accumulation 4, fp16 with the dynamic loss scale, ZeRO-2 with offload, 25 MiB buckets, 8
/// workers, prefetch 2: a GPT-style 6.4B-parameter body, the guide's training loop, DeepSpeed and
/// DataLoader settings; bf16 is the dtype knob, without a loss scale) and "ci" (4
/// layers, hidden 256, FFN 1024, 4 heads, seq 256, micro-batch 8, accumulation 1, fp32, ZeRO-0,
/// one layer per bucket, 1 worker). Throws std::invalid_argument for another name.
TrainingConfig training_preset(const std::string& name);

/// Checks a configuration; returns "" or what is wrong (names the knob).
std::string training_config_error(const TrainingConfig& c);

/// Tokens per micro-step: micro_batch x seq.
long long tokens_per_micro_step(const TrainingConfig& c);
/// Weights of one layer: QKV 3h^2, attention output h^2, MLP up h f, MLP down f h (biases,
/// norms and the embedding are left out): 4h^2 + 2hf.
long long layer_params(const TrainingConfig& c);
/// layers x layer_params.
long long model_params(const TrainingConfig& c);

/// One GEMM of a layer: its shape and how many of it (the attention products run once per
/// sequence and head).
struct LayerGemm {
  std::string
      name;  ///< "qkv", "scores", "context", "out", "up", "down"; backward: "+.dgrad"/".wgrad"
  GemmShape shape;
  long long count = 1;
  bool weight_grad = false;  ///< its output is the layer weight's gradient (k x n of the forward)
};
/// Forward GEMMs of one layer (M = tokens, N = output features, K = input features):
/// qkv T x 3h x h, scores s x s x d and context s x d x s (micro_batch x heads each, d = h /
/// heads), out T x h x h, up T x f x h, down T x h x f.
std::vector<LayerGemm> forward_gemms(const TrainingConfig& c);
/// Backward GEMMs: for each forward M x N x K, the input gradient M x K x N and the weight
/// gradient K x N x M (for attention: the two input gradients, each of the forward's FLOP).
std::vector<LayerGemm> backward_gemms(const TrainingConfig& c);
/// FLOP of a list: sum of count x 2 M N K.
double gemms_flop(const std::vector<LayerGemm>& g);
/// Model FLOP of one optimizer step on one rank: accum x layers x (forward + backward FLOP), the
/// forward being 2 T (4h^2 + 2hf) + 4 micro_batch s^2 h (Narayanan et al. 2021, eq. 2 without
/// the logit layer).
double step_model_flop(const TrainingConfig& c);

/// Gradient buckets, in backward order (last layer first): whole layers, as many per bucket as
/// fit in bucket_bytes (at least one); the last bucket may hold fewer. Values are layers.
std::vector<int> bucket_layers(const TrainingConfig& c);
/// Bytes of one layer's gradient: layer_params x the dtype's size (fp32 4, bf16/fp16 2).
long long layer_grad_bytes(const TrainingConfig& c);
/// Bytes per element of the GEMM dtype.
int dtype_bytes(const std::string& dtype);

/// Seconds of each part, measured alone on one rank (the slowest of a node's ranks for a node).
struct StepParts {
  double forward_layer = 0;         ///< forward GEMMs of one layer
  double backward_layer = 0;        ///< backward GEMMs of one layer
  std::vector<double> bucket_comm;  ///< the gradient collective of each bucket (backward order)
  double optimizer = 0;             ///< Adam over this rank's parameters (ZeRO-2: its shard)
  double d2h = 0, h2d = 0;          ///< offload: the shard's gradient down, its parameters up
  double all_gather = 0;            ///< ZeRO-2: the updated parameters gathered
  double loader_batch = 0;          ///< the loader alone: seconds per batch in steady state
};

/// A predicted step and the phase that bounds it.
struct StepPrediction {
  double step = 0;              ///< seconds
  double compute = 0;           ///< accum x layers x (forward + backward)
  double comm = 0;              ///< every collective of the step, serial: buckets + all_gather
  double exposed_comm = 0;      ///< bucket comm not hidden behind the last backward
  double all_gather = 0;        ///< ZeRO-2's all_gather of the parameters (after the optimizer)
  double optimizer = 0;         ///< d2h + Adam + h2d
  double loader = 0;            ///< accum x loader_batch
  double compute_path = 0;      ///< the step without the loader bound
  std::string bottleneck;       ///< "compute", "network", "optimizer" or "loader"
  double bottleneck_share = 0;  ///< its busy time / step (0..1, the loader's may reach 1)
};

/// The step from its parts (docs/metrics.md "Training step"):
///   backward of the last micro-step: bucket k is ready at r_k = (layers of buckets 1..k) x
///   backward_layer; its collective starts when it is ready and the previous one has ended:
///   e_k = max(e_{k-1}, r_k) + comm_k; the last micro-step's backward ends at max(L b, e_K).
///   compute_path = accum L (f + b) - L b + max(L b, e_K) + d2h + optimizer + h2d + all_gather
///   step = max(compute_path, accum x loader_batch)   (the loader runs beside, `prefetch` ahead)
/// The bottleneck is the phase with the largest busy time (compute, network = comm (the buckets and
/// the all_gather), optimizer = d2h + Adam + h2d, loader); share = its time / step. Gradients are
/// reduced once per optimizer step, in the last micro-step (DDP's no_sync for the others).
StepPrediction predict_step(const TrainingConfig& c, const StepParts& p);

/// Host bytes one rank of `ranks` allocates: the CPU engine's gradients and parameters (fp32,
/// 8 B a parameter), its three layer GEMM buffers (each of the largest M K, K N or M N of a layer's
/// products, fp32) and Adam's fp32 state over the rank's parameters (ZeRO-2: P / ranks; 16 B each);
/// the GPU engine (`gpu`), with offload only: Adam's state and two pinned buffers of the shard in
/// the GEMM dtype (the gradients copied down, the parameters copied up).
double host_bytes_per_rank(const TrainingConfig& c, int ranks, bool gpu);

/// busbw of a bucket's collective (all_reduce: 2(n-1)/n, reduce_scatter (n-1)/n, nccl-tests),
/// GB/s, for `bytes` in `seconds` over `ranks`; 0 when seconds <= 0 or ranks < 2.
double bucket_busbw_gbs(int zero, double bytes, double seconds, int ranks);

/// A configuration as case params (the case key names every field).
nlohmann::json config_params(const TrainingConfig& c);
/// The configuration of case params config_params() made.
TrainingConfig config_of(const nlohmann::json& p);

}  // namespace clusterbench::compute
