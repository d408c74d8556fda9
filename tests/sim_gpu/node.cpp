// The node description (node.hpp).
#include "node.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

namespace cbsim {

namespace {

using nlohmann::json;

/// Model facts of a GPU by its name: compute capability, SMs, L2, modelled rates. Unknown names
/// get the H100 SXM's.
void model_defaults(Gpu& g) {
  const std::string& n = g.name;
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("A100") || has("A800") || has("A30")) {
    g.major = 8, g.minor = 0, g.sm_count = 108, g.l2_bytes = 40 << 20;
    g.bf16_tflops = 290, g.tf32_tflops = 145, g.fp32_tflops = 19;
    g.hbm_copy_gbs = 1700, g.hbm_memcpy_gbs = 1750;
  } else if (has("L40") || has("L4") || has("Ada")) {
    g.major = 8, g.minor = 9, g.sm_count = 142, g.l2_bytes = 96 << 20;
    g.bf16_tflops = 330, g.tf32_tflops = 165, g.fp32_tflops = 85, g.fp8_tflops = 660;
    g.fp8_tflops_no_fast = 600, g.hbm_copy_gbs = 800, g.hbm_memcpy_gbs = 820;
  } else if (has("B200") || has("B100")) {
    g.major = 10, g.minor = 0, g.sm_count = 148, g.l2_bytes = 126 << 20;
    g.bf16_tflops = 1900, g.tf32_tflops = 950, g.fp32_tflops = 75, g.fp8_tflops = 3800;
    g.fp8_tflops_no_fast = 3300, g.hbm_copy_gbs = 6800, g.hbm_memcpy_gbs = 6900;
  } else if (has("H200")) {
    g.hbm_copy_gbs = 4300, g.hbm_memcpy_gbs = 4400;
  }
}

/// "00000000:18:00.0" -> domain, bus, device.
bool parse_bus_id(Gpu& g) {
  unsigned long long domain = 0;
  unsigned bus = 0, dev = 0, fn = 0;
  if (std::sscanf(g.bus_id.c_str(), "%llx:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return false;
  g.domain = static_cast<unsigned>(domain), g.bus = bus, g.device = dev;
  return true;
}

void read_gpu_sim(const json& s, Gpu& g) {
  g.speed = s.value("speed", 1.0);
  if (s.contains("compute_capability")) {
    std::string cc = s.at("compute_capability");
    std::sscanf(cc.c_str(), "%d.%d", &g.major, &g.minor);
  }
  g.sm_count = s.value("sm_count", g.sm_count);
  g.l2_bytes = s.value("l2_bytes", g.l2_bytes);
  if (s.contains("wrong_product")) {
    const json& w = s.at("wrong_product");
    g.wrong_product = {true, w.value("after_s", 0.0), w.value("count", 1LL),
                       w.value("from", std::string("matmul")) == "compare"};
  }
  if (s.contains("sticky_error")) {
    const json& e = s.at("sticky_error");
    g.sticky = {true, e.value("after_s", 0.0), e.value("code", 214)};
  }
}

Gpu read_gpu(const json& j, int index) {
  Gpu g;
  g.nvml_index = index;
  g.name = j.value("name", "NVIDIA H100 80GB HBM3");
  g.uuid = j.value("uuid", "");
  g.bus_id = j.value("pci_bus_id", "");
  if (!parse_bus_id(g)) g.bus = static_cast<unsigned>(0x18 + index);
  g.memory_bytes = j.value("memory_total_bytes", 85520809984LL);
  if (j.contains("pcie")) {
    g.pcie_gen = j["pcie"].value("gen_current", 5);
    g.pcie_width = j["pcie"].value("width_current", 16);
  }
  g.nvlink_links = j.value("nvlink_links", 18);
  g.nvlink_up = j.value("nvlink_up", g.nvlink_links);
  model_defaults(g);
  if (j.contains("sim")) read_gpu_sim(j.at("sim"), g);
  return g;
}

/// CUDA_VISIBLE_DEVICES: indices or UUID prefixes, in order; the list stops at the first entry
/// that names no GPU (as CUDA does).
std::vector<Gpu> visible_gpus(const std::vector<Gpu>& all, const char* visible) {
  if (!visible) return all;
  std::vector<Gpu> out;
  std::stringstream ss(visible);
  for (std::string item; std::getline(ss, item, ',');) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    const Gpu* hit = nullptr;
    if (!item.empty() && item.find_first_not_of("0123456789") == std::string::npos) {
      size_t i = std::stoul(item);
      if (i < all.size()) hit = &all[i];
    } else if (item.rfind("GPU-", 0) == 0) {
      for (const Gpu& g : all)
        if (g.uuid.rfind(item, 0) == 0) hit = &g;
    }
    if (!hit) break;
    out.push_back(*hit);
  }
  return out;
}

Node& mutable_node() {
  static Node n;
  return n;
}

std::mutex& node_mutex() {
  static std::mutex m;
  return m;
}

Node load() {
  const char* path = std::getenv("CBSIM_NODE");
  if (!path || !*path) path = std::getenv("FAKE_NVML_JSON");
  Node n;
  if (!path || !*path) {
    n.error = "no node description: set CBSIM_NODE or FAKE_NVML_JSON";
    return n;
  }
  std::ifstream in(path);
  if (!in) {
    n.error = std::string("cannot open the node description ") + path;
    return n;
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    n = parse_node(text.str(), std::getenv("CUDA_VISIBLE_DEVICES"));
  } catch (const std::exception& e) {
    n = Node{};
    n.error = std::string(path) + ": " + e.what();
  }
  n.path = path;
  return n;
}

}  // namespace

Node parse_node(const std::string& json_text, const char* visible) {
  json d = json::parse(json_text);
  Node n;
  n.driver_cuda = d.value("cuda_driver_version", 13000);
  std::vector<Gpu> all;
  int i = 0;
  for (const json& g : d.value("gpus", json::array())) all.push_back(read_gpu(g, i++));
  n.gpus = visible_gpus(all, visible);
  if (d.contains("sim")) {
    const json& s = d.at("sim");
    n.nccl_version = s.value("nccl_version", n.nccl_version);
    n.ib_ports_active = s.value("ib_ports_active", n.ib_ports_active);
    n.wall_sleep_cap_s = s.value("wall_sleep_cap_s", n.wall_sleep_cap_s);
    n.context_reserve_bytes = s.value("context_reserve_bytes", n.context_reserve_bytes);
  }
  n.loaded = true;
  return n;
}

const Node& node() {
  std::lock_guard<std::mutex> lock(node_mutex());
  Node& n = mutable_node();
  if (!n.loaded && n.error.empty()) {
    n = load();
    if (!n.error.empty()) std::fprintf(stderr, "cbsim: %s\n", n.error.c_str());
  }
  return n;
}

void reload_node() {
  std::lock_guard<std::mutex> lock(node_mutex());
  mutable_node() = load();
}

}  // namespace cbsim
