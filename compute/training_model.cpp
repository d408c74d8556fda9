// compute.training_step's arithmetic: see training_model.hpp.
#include "compute/training_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace clusterbench::compute {

TrainingConfig training_preset(const std::string& name) {
  TrainingConfig c;
  c.preset = name;
  if (name == "7b") {
    c.layers = 32, c.hidden = 4096, c.ffn = 16384, c.heads = 32, c.seq = 2048;
    c.micro_batch = 32, c.accum = 4, c.dtype = "fp16", c.zero = 2, c.offload = true;
    c.bucket_bytes = 25LL << 20, c.workers = 8, c.prefetch = 2, c.loss_scale = true;
  } else if (name == "ci") {
    c.layers = 4, c.hidden = 256, c.ffn = 1024, c.heads = 4, c.seq = 256;
    c.micro_batch = 8, c.accum = 1, c.dtype = "fp32", c.zero = 0, c.offload = false;
    c.bucket_bytes = 4LL << 20, c.workers = 1, c.prefetch = 2;
  } else {
    throw std::invalid_argument("preset '" + name + "': use 7b or ci");
  }
  return c;
}

int dtype_bytes(const std::string& dtype) {
  if (dtype == "fp32" || dtype == "tf32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  throw std::invalid_argument("dtype '" + dtype + "': use fp32, tf32, bf16 or fp16");
}

std::string training_config_error(const TrainingConfig& c) {
  auto positive = [](long long v) { return v >= 1; };
  if (!positive(c.layers)) return "layers must be at least 1";
  if (!positive(c.hidden) || !positive(c.ffn)) return "hidden and ffn must be at least 1";
  if (!positive(c.heads) || c.hidden % c.heads != 0)
    return "heads must be at least 1 and divide hidden";
  if (!positive(c.seq) || !positive(c.micro_batch)) return "seq and micro_batch must be >= 1";
  if (!positive(c.accum)) return "accum must be at least 1";
  if (c.zero != 0 && c.zero != 2) return "zero must be 0 or 2";
  if (c.offload && c.zero != 2)
    return "offload needs zero=2 (the optimizer shard goes to the host)";
  if (!positive(c.bucket_bytes)) return "bucket must be at least 1 byte";
  if (!positive(c.workers) || !positive(c.prefetch) || c.workers > 1024 || c.prefetch > 1024)
    return "workers and prefetch must be in 1..1024";
  try {
    dtype_bytes(c.dtype);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  if (c.loss_scale && (c.dtype != "fp16" || !c.offload))
    return "loss_scale dynamic needs dtype fp16 and offload (the host optimizer checks and "
           "unscales the gradients)";
  return "";
}

bool LossScaler::unscale(float* g, long long n) {
  bool finite = true;
  for (long long i = 0; i < n; ++i) finite &= std::isfinite(g[i]);
  if (!finite) {
    scale = std::max(1.0, scale / 2), clean = 0, ++skipped;
    return false;
  }
  const float inv = static_cast<float>(1.0 / scale);
  for (long long i = 0; i < n; ++i) g[i] *= inv;
  if (++clean >= kLossScaleWindow) scale *= 2, clean = 0;
  return true;
}

long long tokens_per_micro_step(const TrainingConfig& c) {
  return static_cast<long long>(c.micro_batch) * c.seq;
}

long long layer_params(const TrainingConfig& c) {
  const long long h = c.hidden, f = c.ffn;
  return 4 * h * h + 2 * h * f;
}

long long model_params(const TrainingConfig& c) { return c.layers * layer_params(c); }

std::vector<LayerGemm> forward_gemms(const TrainingConfig& c) {
  const long long t = tokens_per_micro_step(c), h = c.hidden, f = c.ffn, s = c.seq;
  const long long d = h / c.heads, per_head = static_cast<long long>(c.micro_batch) * c.heads;
  return {{"qkv", {t, 3 * h, h}, 1, false},
          {"scores", {s, s, d}, per_head, false},
          {"context", {s, d, s}, per_head, false},
          {"out", {t, h, h}, 1, false},
          {"up", {t, f, h}, 1, false},
          {"down", {t, h, f}, 1, false}};
}

std::vector<LayerGemm> backward_gemms(const TrainingConfig& c) {
  std::vector<LayerGemm> out;
  for (const auto& g : forward_gemms(c)) {
    const bool linear = g.count == 1;
    const GemmShape s = g.shape;
    out.push_back({g.name + ".dgrad", {s.m, s.k, s.n}, g.count, false});
    out.push_back({g.name + (linear ? ".wgrad" : ".dgrad2"), {s.k, s.n, s.m}, g.count, linear});
  }
  return out;
}

double gemms_flop(const std::vector<LayerGemm>& g) {
  double sum = 0;
  for (const auto& x : g) sum += static_cast<double>(x.count) * gemm_flop(x.shape);
  return sum;
}

double step_model_flop(const TrainingConfig& c) {
  const double per_layer = gemms_flop(forward_gemms(c)) + gemms_flop(backward_gemms(c));
  return static_cast<double>(c.accum) * c.layers * per_layer;
}

long long layer_grad_bytes(const TrainingConfig& c) {
  return layer_params(c) * dtype_bytes(c.dtype);
}

std::vector<int> bucket_layers(const TrainingConfig& c) {
  const long long per = std::max(1LL, c.bucket_bytes / layer_grad_bytes(c));
  std::vector<int> out;
  for (int left = c.layers; left > 0;) {
    int n = static_cast<int>(std::min<long long>(per, left));
    out.push_back(n);
    left -= n;
  }
  return out;
}

StepPrediction predict_step(const TrainingConfig& c, const StepParts& p) {
  StepPrediction r;
  const std::vector<int> buckets = bucket_layers(c);
  if (p.bucket_comm.size() != buckets.size())
    throw std::invalid_argument("predict_step: one comm time per bucket is needed");
  const double L = c.layers, fwd = L * p.forward_layer, bwd = L * p.backward_layer;
  double ready = 0, end = 0;
  for (size_t k = 0; k < buckets.size(); ++k) {
    ready += buckets[k] * p.backward_layer;
    end = std::max(end, ready) + p.bucket_comm[k];
    r.comm += p.bucket_comm[k];
  }
  const double last_backward = std::max(bwd, end);
  r.exposed_comm = last_backward - bwd;
  r.compute = c.accum * (fwd + bwd);
  r.optimizer = p.d2h + p.optimizer + p.h2d;
  r.all_gather = p.all_gather;
  r.comm += p.all_gather;
  r.compute_path = r.compute - bwd + last_backward + r.optimizer + r.all_gather;
  r.loader = c.accum * p.loader_batch;
  r.step = std::max(r.compute_path, r.loader);
  const std::pair<const char*, double> phases[] = {{"compute", r.compute},
                                                   {"network", r.comm},
                                                   {"optimizer", r.optimizer},
                                                   {"loader", r.loader}};
  for (const auto& [name, t] : phases) {
    if (r.bottleneck.empty() || t > r.bottleneck_share) r.bottleneck = name, r.bottleneck_share = t;
  }
  r.bottleneck_share = r.step > 0 ? r.bottleneck_share / r.step : 0;
  return r;
}

double host_bytes_per_rank(const TrainingConfig& c, int ranks, bool gpu) {
  const double params = static_cast<double>(model_params(c));
  const double shard = c.zero == 2 ? params / std::max(1, ranks) : params;
  // The GPU engine with offload: Adam's fp32 state, and the two pinned buffers of the shard in
  // the GEMM dtype (gradients down, parameters up).
  if (gpu) return c.offload ? (16 + 2.0 * dtype_bytes(c.dtype)) * shard : 0;
  // Every forward and backward product's A, B and C are one of M K, K N and M N of a forward.
  double biggest = 0;
  for (const auto& g : forward_gemms(c)) {
    const GemmShape x = g.shape;
    biggest = std::max({biggest, static_cast<double>(x.m * x.k), static_cast<double>(x.k * x.n),
                        static_cast<double>(x.m * x.n)});
  }
  return 8 * params + 12 * biggest + 16 * shard;
}

double bucket_busbw_gbs(int zero, double bytes, double seconds, int ranks) {
  if (seconds <= 0 || ranks < 2) return 0;
  const double n = ranks, factor = zero == 0 ? 2 * (n - 1) / n : (n - 1) / n;
  return bytes / seconds / 1e9 * factor;
}

nlohmann::json config_params(const TrainingConfig& c) {
  return {{"preset", c.preset},
          {"layers", c.layers},
          {"hidden", c.hidden},
          {"ffn", c.ffn},
          {"heads", c.heads},
          {"seq", c.seq},
          {"micro_batch", c.micro_batch},
          {"accum", c.accum},
          {"dtype", c.dtype},
          {"zero", c.zero},
          {"offload", c.offload},
          {"bucket", c.bucket_bytes},
          {"workers", c.workers},
          {"prefetch", c.prefetch},
          {"loss_scale", c.loss_scale ? "dynamic" : "none"}};
}
TrainingConfig config_of(const nlohmann::json& p) {
  TrainingConfig c = training_preset(p.at("preset").get<std::string>());
  c.layers = p.at("layers"), c.hidden = p.at("hidden"), c.ffn = p.at("ffn");
  c.heads = p.at("heads"), c.seq = p.at("seq"), c.micro_batch = p.at("micro_batch");
  c.accum = p.at("accum"), c.dtype = p.at("dtype"), c.zero = p.at("zero");
  c.offload = p.at("offload"), c.bucket_bytes = p.at("bucket"), c.workers = p.at("workers");
  c.prefetch = p.at("prefetch");
  c.loss_scale = p.value("loss_scale", "none") == "dynamic";  // none in records before it
  return c;
}

}  // namespace clusterbench::compute
