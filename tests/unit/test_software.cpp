// env/software.hpp: the software stack's version decoders and parsers against hand-decoded
// values, and collect_software on a fixture root with sockets, labels and a DCGM stand-in.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "env/software.hpp"

namespace clusterbench {
namespace {

namespace fs = std::filesystem;

TEST(Software, CudnnAndNcclVersionNumbers) {
  EXPECT_EQ(cudnn_version_text(90100), "9.1.0");   // 9 * 10000 + 1 * 100 + 0
  EXPECT_EQ(cudnn_version_text(91002), "9.10.2");  // 9 * 10000 + 10 * 100 + 2
  EXPECT_EQ(cudnn_version_text(8902), "8.9.2");    // 8 * 1000 + 9 * 100 + 2
  EXPECT_EQ(cudnn_version_text(0), "");
  EXPECT_EQ(nccl_version_text(22105), "2.21.5");  // 2 * 10000 + 21 * 100 + 5
  EXPECT_EQ(nccl_version_text(2708), "2.7.8");    // before 2.9: 2 * 1000 + 7 * 100 + 8
  EXPECT_EQ(nccl_version_text(-1), "");
}

TEST(Software, VersionsFromToolOutput) {
  EXPECT_EQ(container_toolkit_version("NVIDIA Container Toolkit CLI version 1.14.3\n"
                                      "commit: 53b24618a542025b108239fe602e66e912b7d6e2\n"),
            "1.14.3");
  EXPECT_EQ(container_toolkit_version("nvidia-ctk: unknown flag\n"), "");
  EXPECT_EQ(first_version("Docker version 24.0.7, build afdd53b"), "24.0.7");
  EXPECT_EQ(first_version("containerd github.com/containerd/containerd 1.7.2 0cae528"), "1.7.2");
  EXPECT_EQ(first_version("podman version 4.3.1"), "4.3.1");
  EXPECT_EQ(first_version("no number here"), "");
  // Found only where the toolkit says it: not a CUDA version elsewhere in the line.
  EXPECT_EQ(container_toolkit_version("nvidia-ctk: cuda version 12.4\n"), "");
  EXPECT_EQ(container_toolkit_version("NVIDIA Container Toolkit CLI version 1.x\n"), "");
  // Long input is cut, not recursed over (a regex over 100,000 digits crashed).
  EXPECT_EQ(first_version("v 1." + std::string(100000, '7')), "");
  EXPECT_EQ(container_toolkit_version("NVIDIA Container Toolkit CLI version 1." +
                                      std::string(100000, '7')),
            "");
}

TEST(Software, ExporterMetricMustBeASampleLine) {
  std::string why;
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n";
  EXPECT_TRUE(exports_metric(head + "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
                                    "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
                                    "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-1\"} 34\n",
                             "DCGM_FI_DEV_GPU_TEMP", why));
  // Only the comments: the metric is declared but no GPU is watched.
  EXPECT_FALSE(exports_metric(head + "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
                                     "DCGM_FI_DEV_GPU_TEMPERATURE_X 1\n",
                              "DCGM_FI_DEV_GPU_TEMP", why));
  EXPECT_EQ(why,
            "up, but DCGM_FI_DEV_GPU_TEMP is not exported (no GPU watched, or a reduced "
            "metric list)");
  EXPECT_FALSE(exports_metric("HTTP/1.1 404 Not Found\r\n\r\n", "DCGM_FI_DEV_GPU_TEMP", why));
  EXPECT_EQ(why, "answered 'HTTP/1.1 404 Not Found'");
  // " 200" elsewhere in the status line is not a 200.
  EXPECT_FALSE(
      exports_metric("HTTP/1.1 503 Unavailable, retry after 200 s\r\n\r\n"
                     "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 41\n",
                     "DCGM_FI_DEV_GPU_TEMP", why));
}

/// A UNIX socket file at `path` (bound, then the descriptor closed: the file stays).
void make_socket(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << path;
  ::close(fd);
}

/// Serves one HTTP request on 127.0.0.1 with `response`; returns its port.
int serve_once(const std::string& response, std::thread& t) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::listen(fd, 1);
  t = std::thread([fd, response] {
    int c = ::accept(fd, nullptr, nullptr);
    char buf[4096];
    (void)::recv(c, buf, sizeof buf, 0);
    (void)::send(c, response.data(), response.size(), MSG_NOSIGNAL);
    ::close(c);
    ::close(fd);
  });
  return ntohs(a.sin_port);
}

class SoftwareRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cbsoftroot.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

// Issue 44, item 3: the container toolkit is judged where Docker or containerd runs, even with
// no Kubernetes (the guide installs it for Docker); not applicable only where neither runs.
TEST_F(SoftwareRoot, TheToolkitIsJudgedWhereAContainerRuntimeRuns) {
  SoftwareProbeOptions opt;
  opt.fs_root = root_;
  opt.dcgm_url = "http://127.0.0.1:1/metrics";
  const SoftwareStack none = collect_software(opt);
  if (none.container_toolkit.state == "present") GTEST_SKIP() << "nvidia-ctk is installed here";
  EXPECT_EQ(none.container_toolkit.state, "not applicable");
  EXPECT_NE(none.container_toolkit.detail.find("no Kubernetes and no container runtime"),
            std::string::npos);
  fs::create_directories(root_ + "/run");
  make_socket(root_ + "/run/docker.sock");
  const SoftwareStack docker = collect_software(opt);
  EXPECT_EQ(docker.kubernetes.state, "absent");
  EXPECT_EQ(docker.container_runtime.state, "present");
  EXPECT_EQ(docker.container_toolkit.state, "absent") << docker.container_toolkit.detail;
}

// Issue 44, item 1: the installed CUDA toolkit, not the driver's CUDA API version: version.json
// (CUDA 11.1 and later), else version.txt; absent when neither is there (a fixture root never
// asks this host's nvcc).
TEST_F(SoftwareRoot, TheInstalledCudaToolkit) {
  SoftwareProbeOptions opt;
  opt.fs_root = root_;
  opt.dcgm_url = "http://127.0.0.1:1/metrics";
  EXPECT_EQ(collect_software(opt).cuda_toolkit.state, "absent");
  fs::create_directories(root_ + "/usr/local/cuda");
  std::ofstream(root_ + "/usr/local/cuda/version.txt") << "CUDA Version 11.0.228\n";
  SoftwareComponent c = collect_software(opt).cuda_toolkit;
  EXPECT_EQ(c.state, "present");
  EXPECT_EQ(c.version.value_or(""), "11.0.228");
  std::ofstream(root_ + "/usr/local/cuda/version.json")
      << R"({"cuda": {"name": "CUDA SDK", "version": "12.2.140"}, "cuda_cudart": {"version": "12.2.140"}})";
  c = collect_software(opt).cuda_toolkit;
  EXPECT_EQ(c.version.value_or(""), "12.2.140");
  EXPECT_EQ(c.detail, root_ + "/usr/local/cuda/version.json");
}

TEST_F(SoftwareRoot, NoKubernetesMakesPluginAndToolkitNotApplicable) {
  SoftwareProbeOptions opt;
  opt.fs_root = root_;
  opt.dcgm_url = "http://127.0.0.1:1/metrics";  // port 1: nothing listens
  const SoftwareStack s = collect_software(opt);
  EXPECT_EQ(s.kubernetes.state, "absent");
  EXPECT_EQ(s.kubernetes.detail, "no kubelet on this node: no " + root_ +
                                     "/var/lib/kubelet/device-plugins/kubelet.sock");
  EXPECT_EQ(s.device_plugin.state, "not applicable");
  EXPECT_EQ(s.gpu_feature_discovery.state, "not applicable");
  EXPECT_FALSE(s.device_plugin.version.has_value());
  EXPECT_EQ(s.dcgm_exporter.state, "down");
  EXPECT_NE(s.dcgm_exporter.detail.find("http://127.0.0.1:1/metrics: "), std::string::npos);
  EXPECT_EQ(s.container_runtime.state, "absent");  // no runtime socket below the fixture root
  // A URL that is not probed: a name (its lookup cannot be bounded), a port out of range.
  for (const char* url : {"http://exporter.invalid:9400/metrics", "http://127.0.0.1:84937/metrics",
                          "https://127.0.0.1:9400/metrics"}) {
    opt.dcgm_url = url;
    const SoftwareComponent d = collect_software(opt).dcgm_exporter;
    EXPECT_EQ(d.state, "down") << url;
    EXPECT_NE(d.detail.find(url), std::string::npos) << d.detail;
  }
  const char* ib = std::getenv("NCCL_IB_DISABLE");
  EXPECT_EQ(s.nccl_env.at("NCCL_IB_DISABLE"), ib ? ib : "unset");
}

TEST_F(SoftwareRoot, KubeletPluginLabelsRuntimeAndExporterFound) {
  const std::string plugins = root_ + "/var/lib/kubelet/device-plugins";
  make_socket(plugins + "/kubelet.sock");
  SoftwareProbeOptions opt;
  opt.fs_root = root_;
  std::thread server;
  const int port =
      serve_once("HTTP/1.0 200 OK\r\n\r\nDCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 41\n", server);
  opt.dcgm_url = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  SoftwareStack s = collect_software(opt);
  server.join();
  EXPECT_EQ(s.kubernetes.state, "present");
  EXPECT_EQ(s.device_plugin.state, "absent");  // a kubelet, but no NVIDIA plugin registered
  EXPECT_EQ(s.device_plugin.detail, "no nvidia*.sock in " + plugins);
  EXPECT_EQ(s.gpu_feature_discovery.state, "absent");
  EXPECT_EQ(s.dcgm_exporter.state, "up");

  make_socket(plugins + "/nvidia-gpu.sock");
  make_socket(root_ + "/run/containerd/containerd.sock");
  fs::create_directories(root_ + "/etc/kubernetes/node-feature-discovery/features.d");
  std::ofstream(root_ + "/etc/kubernetes/node-feature-discovery/features.d/gfd")
      << "nvidia.com/gpu.product=NVIDIA-H200\n";
  opt.dcgm_url = "http://127.0.0.1:1/metrics";
  s = collect_software(opt);
  EXPECT_EQ(s.device_plugin.state, "present");
  EXPECT_EQ(s.device_plugin.detail, plugins + "/nvidia-gpu.sock");
  EXPECT_EQ(s.gpu_feature_discovery.state, "present");
  EXPECT_EQ(s.container_runtime.state, "present");
  EXPECT_EQ(s.container_runtime.detail.rfind("containerd (/run/containerd/containerd.sock)", 0), 0u)
      << s.container_runtime.detail;
}

namespace {

/// A containerd bundle of Kubernetes' namespace running `image` (its CRI annotation).
void run_container(const std::string& root, const std::string& id, const std::string& image) {
  const std::string dir = root + "/run/containerd/io.containerd.runtime.v2.task/k8s.io/" + id;
  fs::create_directories(dir);
  std::ofstream(dir + "/config.json") << json{
      {"ociVersion", "1.1.0"},
      {"annotations",
       {{"io.kubernetes.cri.container-type", "container"},
        {"io.kubernetes.cri.image-name",
         image}}}}.dump();
}

/// A Kubernetes node below `root` with NVIDIA's plugin, GFD labels and the three images.
void k8s_node(const std::string& root, const std::string& plugin, const std::string& gfd,
              const std::string& dcgm, const std::string& os_version) {
  make_socket(root + "/var/lib/kubelet/device-plugins/kubelet.sock");
  make_socket(root + "/var/lib/kubelet/device-plugins/nvidia-gpu.sock");
  fs::create_directories(root + "/etc/kubernetes/node-feature-discovery/features.d");
  std::ofstream(root + "/etc/kubernetes/node-feature-discovery/features.d/gfd") << "x=y\n";
  run_container(root, "a1", "nvcr.io/nvidia/k8s-device-plugin:" + plugin);
  run_container(root, "b2", "nvcr.io/nvidia/gpu-feature-discovery:" + gfd);
  run_container(root, "c3", "nvcr.io/nvidia/k8s/dcgm-exporter:" + dcgm);
  run_container(root, "d4", "registry.k8s.io/pause:3.9");
  fs::create_directories(root + "/etc");
  std::ofstream(root + "/etc/os-release")
      << "PRETTY_NAME=\"Ubuntu " << os_version << " LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\""
      << os_version << "\"\nID=ubuntu\n";
}

}  // namespace

// Issue 44, item 2: the versions of the guide's stack, from an inventory tree with its stack and
// one with an older one.
TEST_F(SoftwareRoot, TheGuidesStackVersionsFromTheTree) {
  SoftwareProbeOptions opt;
  opt.fs_root = root_;
  opt.dcgm_url = "http://127.0.0.1:1/metrics";
  k8s_node(root_, "v0.14.0", "v0.8.0", "3.1.8-3.1.5-ubuntu20.04", "22.04");
  SoftwareStack s = collect_software(opt);
  EXPECT_EQ(s.device_plugin.version.value_or("?"), "0.14.0");
  EXPECT_NE(s.device_plugin.detail.find("; image nvcr.io/nvidia/k8s-device-plugin:v0.14.0"),
            std::string::npos);
  EXPECT_EQ(s.gpu_feature_discovery.version.value_or("?"), "0.8.0");
  EXPECT_EQ(s.os.version.value_or("?"), "ubuntu 22.04");
  EXPECT_EQ(s.os.detail, root_ + "/etc/os-release: Ubuntu 22.04 LTS");
  // The exporter is down (no server): its image's version is not read from a down service.
  EXPECT_EQ(s.dcgm_exporter.state, "down");
  EXPECT_EQ(s.dcgm_exporter.unknown.at("version").rfind("down: ", 0), 0u);
  const std::vector<std::string> images = running_images(root_);
  ASSERT_EQ(images.size(), 4u);
  std::string image;
  EXPECT_EQ(image_version(images, "dcgm-exporter", image), "3.1.8-3.1.5");
  EXPECT_EQ(image, "nvcr.io/nvidia/k8s/dcgm-exporter:3.1.8-3.1.5-ubuntu20.04");

  fs::remove_all(root_);
  fs::create_directories(root_);
  k8s_node(root_, "v0.13.0-ubi8", "v0.7.0", "2.4.6-2.6.10-ubuntu20.04", "20.04");
  s = collect_software(opt);
  EXPECT_EQ(s.device_plugin.version.value_or("?"), "0.13.0");
  EXPECT_EQ(s.gpu_feature_discovery.version.value_or("?"), "0.7.0");
  EXPECT_EQ(s.os.version.value_or("?"), "ubuntu 20.04");
  // A plugin without a running container of its image: present, its version unknown with why.
  fs::remove_all(root_ + "/run/containerd");
  s = collect_software(opt);
  EXPECT_EQ(s.device_plugin.state, "present");
  EXPECT_FALSE(s.device_plugin.version.has_value());
  EXPECT_NE(s.device_plugin.unknown.at("version").find("no running container of an image named "
                                                       "k8s-device-plugin"),
            std::string::npos);
}

TEST(Software, ImageTagsAsVersions) {
  std::string image;
  const std::vector<std::string> images = {
      "registry.local:5000/nvidia/k8s-device-plugin:v0.15.0@sha256:abc",
      "docker.io/library/not-k8s-device-plugin:v9.9.9",
      "nvcr.io/nvidia/gpu-feature-discovery:latest"};
  EXPECT_EQ(image_version(images, "k8s-device-plugin", image), "0.15.0");
  EXPECT_EQ(image, images[0]);
  EXPECT_EQ(image_version(images, "gpu-feature-discovery", image), "");  // "latest" says nothing
  EXPECT_EQ(image_version({"registry.local:5000/k8s-device-plugin"}, "k8s-device-plugin", image),
            "");  // no tag: the port is not one
}

TEST(Software, TextForTablesNeverAVersionZero) {
  SoftwareStack s;
  EXPECT_EQ(software_text(s.cudnn), "unknown");  // not probed (an older record)
  s.cudnn = {"present", std::string("9.1.0"), "libcudnn.so.9"};
  s.nccl = {"absent", std::nullopt, "libnccl.so.2: cannot open shared object file"};
  EXPECT_EQ(software_text(s.cudnn), "9.1.0");
  EXPECT_EQ(software_text(s.nccl), "absent");
  auto f = software_fields(s);
  ASSERT_EQ(f.size(), 13u);
  EXPECT_EQ(f[10], (std::pair<std::string, std::string>{"cuda toolkit", "unknown"}));
  EXPECT_EQ(f[12], (std::pair<std::string, std::string>{"os", "unknown"}));
  EXPECT_EQ(f[0], (std::pair<std::string, std::string>{"cudnn", "9.1.0"}));
  EXPECT_EQ(f[3], (std::pair<std::string, std::string>{"pytorch cuda", "unknown"}));
}

}  // namespace
}  // namespace clusterbench
