// compute.training_step's arithmetic (compute/training_model.hpp, docs/metrics.md "Training
// step"): parameter and FLOP counts, buckets, busbw and the step prediction, each against
// numbers worked by hand in the comments.
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "compute/training_model.hpp"

using namespace clusterbench::compute;

TEST(TrainingModel, CiPresetCounts) {
  const TrainingConfig c = training_preset("ci");
  EXPECT_EQ(training_config_error(c), "");
  EXPECT_EQ(tokens_per_micro_step(c), 2048);  // 8 x 256
  // 4 x 256^2 + 2 x 256 x 1024 = 262,144 + 524,288
  EXPECT_EQ(layer_params(c), 786432);
  EXPECT_EQ(model_params(c), 3145728);
  EXPECT_EQ(layer_grad_bytes(c), 3145728);  // fp32
  // Forward: 2 T P_l = 2 x 2048 x 786,432 = 3,221,225,472; attention 4 b s^2 h =
  // 4 x 8 x 65,536 x 256 = 536,870,912 (scores and context: 32 products of 256x256x64 each).
  EXPECT_DOUBLE_EQ(gemms_flop(forward_gemms(c)), 3758096384.0);
  EXPECT_DOUBLE_EQ(gemms_flop(backward_gemms(c)), 2 * 3758096384.0);
  EXPECT_DOUBLE_EQ(step_model_flop(c), 4 * 3 * 3758096384.0);  // 45,097,156,608
  // 4 MiB buckets hold one 3 MiB layer each.
  EXPECT_EQ(bucket_layers(c), (std::vector<int>{1, 1, 1, 1}));
}

TEST(TrainingModel, SevenBPresetCounts) {
  const TrainingConfig c = training_preset("7b");
  EXPECT_EQ(training_config_error(c), "");
  EXPECT_EQ(layer_params(c), 201326592);      // 4 x 4096^2 + 2 x 4096 x 16384
  EXPECT_EQ(model_params(c), 6442450944LL);   // x 32 layers: 6.44 B
  EXPECT_EQ(layer_grad_bytes(c), 402653184);  // fp16: 384 MiB, more than a 25 MiB bucket
  EXPECT_EQ(bucket_layers(c).size(), 32u);
  // The guide's loop: micro-batch 32, accumulation 4, fp16 with the dynamic loss scale.
  EXPECT_EQ(c.micro_batch, 32);
  EXPECT_EQ(c.accum, 4);
  EXPECT_EQ(c.dtype, "fp16");
  EXPECT_TRUE(c.loss_scale);
  EXPECT_EQ(tokens_per_micro_step(c) * c.accum, 262144);  // 32 x 2048 x 4
  // Forward per layer: 2 x 65536 x 201,326,592 + 4 x 32 x 2048^2 x 4096 = 26.388e12 + 2.199e12.
  EXPECT_DOUBLE_EQ(gemms_flop(forward_gemms(c)), 26388279066624.0 + 2199023255552.0);
  EXPECT_EQ(config_params(c).at("loss_scale"), "dynamic");
  EXPECT_TRUE(config_of(config_params(c)).loss_scale);
  nlohmann::json old = config_params(c);
  old.erase("loss_scale");  // a record written before the loss scale: none
  EXPECT_FALSE(config_of(old).loss_scale);
}

TEST(TrainingModel, DynamicLossScale) {
  LossScaler s;
  std::vector<float> g = {65536.0f, -32768.0f, 0.0f};
  EXPECT_TRUE(s.unscale(g.data(), 3));  // unscaled by 1 / 2^16
  EXPECT_EQ(g, (std::vector<float>{1.0f, -0.5f, 0.0f}));
  EXPECT_EQ(s.clean, 1);
  std::vector<float> bad = {1.0f, std::numeric_limits<float>::infinity(), 2.0f};
  EXPECT_FALSE(s.unscale(bad.data(), 3));  // skipped, the scale halved, nothing unscaled
  EXPECT_EQ(bad[0], 1.0f);
  EXPECT_EQ(s.scale, 32768.0);
  EXPECT_EQ(s.skipped, 1);
  std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN()};
  EXPECT_FALSE(s.unscale(nan.data(), 1));
  EXPECT_EQ(s.scale, 16384.0);
  // kLossScaleWindow clean steps double it.
  std::vector<float> one = {1.0f};
  for (int i = 0; i < kLossScaleWindow - 1; ++i) EXPECT_TRUE(s.unscale(one.data(), 1));
  EXPECT_EQ(s.scale, 16384.0);
  EXPECT_TRUE(s.unscale(one.data(), 1));
  EXPECT_EQ(s.scale, 32768.0);
  EXPECT_EQ(s.clean, 0);
  // The loss scale is fp16's, on the host optimizer.
  TrainingConfig c = training_preset("7b");
  c.dtype = "bf16";
  EXPECT_NE(training_config_error(c).find("loss_scale dynamic needs dtype fp16 and offload"),
            std::string::npos);
  c.loss_scale = false;
  EXPECT_EQ(training_config_error(c), "");
}

TEST(TrainingModel, WeightGradientsCoverTheLayer) {
  const TrainingConfig c = training_preset("ci");
  long long grads = 0;
  for (const auto& g : backward_gemms(c))
    if (g.weight_grad) grads += g.shape.m * g.shape.n;
  EXPECT_EQ(grads, layer_params(c));  // the backward writes exactly the layer's gradient
  EXPECT_EQ(backward_gemms(c).size(), 2 * forward_gemms(c).size());
}

TEST(TrainingModel, BucketsAreWholeLayersLastOneShort) {
  TrainingConfig c = training_preset("ci");
  c.layers = 5;
  c.bucket_bytes = 2 * layer_grad_bytes(c) + 1;
  EXPECT_EQ(bucket_layers(c), (std::vector<int>{2, 2, 1}));
  c.bucket_bytes = 1;  // at least one layer per bucket
  EXPECT_EQ(bucket_layers(c).size(), 5u);
}

TEST(TrainingModel, ConfigErrorsNameTheKnob) {
  TrainingConfig c = training_preset("ci");
  c.heads = 3;
  EXPECT_NE(training_config_error(c).find("heads"), std::string::npos);
  c = training_preset("ci");
  c.offload = true;
  EXPECT_NE(training_config_error(c).find("offload"), std::string::npos);
  c = training_preset("ci");
  c.zero = 1;
  EXPECT_NE(training_config_error(c).find("zero"), std::string::npos);
  EXPECT_THROW(training_preset("13b"), std::invalid_argument);
}

namespace {
/// 4 layers, one per bucket, accumulation 2: forward 10 ms, backward 20 ms per layer, Adam 5 ms,
/// the loader 1 ms per batch.
StepParts parts(double comm) {
  StepParts p;
  p.forward_layer = 0.01, p.backward_layer = 0.02, p.optimizer = 0.005, p.loader_batch = 0.001;
  p.bucket_comm = {comm, comm, comm, comm};
  return p;
}
TrainingConfig accum2() {
  TrainingConfig c = training_preset("ci");
  c.accum = 2;
  return c;
}
}  // namespace

TEST(TrainingModel, PredictionComputeBound) {
  // Buckets ready at 20, 40, 60, 80 ms; 30 ms each: they end at 50, 80, 110, 140 ms, so the last
  // backward ends at 140 ms instead of 80 (60 ms exposed). compute = 2 x (40 + 80) = 240 ms;
  // step = 240 - 80 + 140 + 5 = 305 ms. Phases: compute 240, network 120, optimizer 5, loader 2.
  const StepPrediction r = predict_step(accum2(), parts(0.03));
  EXPECT_NEAR(r.step, 0.305, 1e-12);
  EXPECT_NEAR(r.exposed_comm, 0.06, 1e-12);
  EXPECT_NEAR(r.comm, 0.12, 1e-12);
  EXPECT_NEAR(r.compute, 0.24, 1e-12);
  EXPECT_EQ(r.bottleneck, "compute");
  EXPECT_NEAR(r.bottleneck_share, 0.24 / 0.305, 1e-12);
}

TEST(TrainingModel, PredictionNetworkBound) {
  // 100 ms buckets end at 120, 220, 320, 420 ms: step = 240 - 80 + 420 + 5 = 585 ms; the
  // network's 400 ms are its largest phase.
  const StepPrediction r = predict_step(accum2(), parts(0.1));
  EXPECT_NEAR(r.step, 0.585, 1e-12);
  EXPECT_EQ(r.bottleneck, "network");
  EXPECT_NEAR(r.bottleneck_share, 0.4 / 0.585, 1e-12);
}

TEST(TrainingModel, PredictionLoaderBound) {
  StepParts p = parts(0.03);
  p.loader_batch = 0.2;  // 2 batches a step: 400 ms > the 305-ms compute path
  const StepPrediction r = predict_step(accum2(), p);
  EXPECT_NEAR(r.step, 0.4, 1e-12);
  EXPECT_NEAR(r.compute_path, 0.305, 1e-12);
  EXPECT_EQ(r.bottleneck, "loader");
  EXPECT_NEAR(r.bottleneck_share, 1.0, 1e-12);
}

TEST(TrainingModel, PredictionZero2Offload) {
  // ZeRO-2 with offload adds d2h 3 ms, h2d 4 ms and an all_gather of 50 ms after the backward:
  // 305 + 3 + 4 + 50 = 362 ms; the network (120 + 50) is still below compute (240).
  TrainingConfig c = accum2();
  c.zero = 2, c.offload = true;
  StepParts p = parts(0.03);
  p.d2h = 0.003, p.h2d = 0.004, p.all_gather = 0.05;
  const StepPrediction r = predict_step(c, p);
  EXPECT_NEAR(r.step, 0.362, 1e-12);
  EXPECT_NEAR(r.optimizer, 0.012, 1e-12);
  EXPECT_NEAR(r.all_gather, 0.05, 1e-12);
  EXPECT_NEAR(r.comm, 0.17, 1e-12);  // the buckets' 120 ms and the all_gather
  EXPECT_EQ(r.bottleneck, "compute");
  p.bucket_comm.pop_back();
  EXPECT_THROW(predict_step(c, p), std::invalid_argument);
}

TEST(TrainingModel, BucketBusbw) {
  // 3e6 B in 0.1 s = 0.03 GB/s algbw; all_reduce x 2(n-1)/n, reduce_scatter x (n-1)/n.
  EXPECT_NEAR(bucket_busbw_gbs(0, 3e6, 0.1, 2), 0.03, 1e-12);
  EXPECT_NEAR(bucket_busbw_gbs(0, 3e6, 0.1, 4), 0.045, 1e-12);
  EXPECT_NEAR(bucket_busbw_gbs(2, 3e6, 0.1, 4), 0.0225, 1e-12);
  EXPECT_EQ(bucket_busbw_gbs(0, 3e6, 0.1, 1), 0.0);
  EXPECT_EQ(bucket_busbw_gbs(0, 3e6, 0.0, 2), 0.0);
}

TEST(TrainingModel, HostBytesPerRank) {
  // ci: 8 B x 3,145,728 parameters = 25,165,824; three buffers of the largest product side
  // (up: 2048 x 1024 = 2,097,152 floats) = 25,165,824; Adam 16 B x 3,145,728 = 50,331,648.
  const TrainingConfig c = training_preset("ci");
  EXPECT_DOUBLE_EQ(host_bytes_per_rank(c, 2, false), 100663296.0);
  EXPECT_DOUBLE_EQ(host_bytes_per_rank(c, 2, true), 0.0);  // no offload: nothing on the host
  // 7b on 32 GPUs: Adam's fp32 state over a 1/32 shard, 16 B x 201,326,592 = 3,221,225,472,
  // and the two pinned bf16 buffers (gradients down, parameters up), 2 x 2 B x 201,326,592 =
  // 805,306,368.
  EXPECT_DOUBLE_EQ(host_bytes_per_rank(training_preset("7b"), 32, true), 4026531840.0);
}
