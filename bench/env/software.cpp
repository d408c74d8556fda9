// The software stack probes (software.hpp).
#include "env/software.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>
#include <sstream>

#include "process/process.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

namespace fs = std::filesystem;

namespace {

/// `path` (absolute) below `root`.
std::string below(const std::string& root, const std::string& path) {
  return root == "/" || root.empty() ? path : root + path;
}

SoftwareComponent absent(const std::string& why) { return {"absent", std::nullopt, why}; }

SoftwareComponent present(const std::string& version, const std::string& how) {
  return {"present", version.empty() ? std::nullopt : std::optional<std::string>(version), how};
}

/// Loads the first of `names` that loads and calls its version function (`size_t
/// cudnnGetVersion(void)`, or `ncclResult_t ncclGetVersion(int*)`: `by_pointer`). Loaded in a
/// link-map namespace of its own (dlmopen LM_ID_NEWLM) and unloaded: in the process's own
/// namespace it would stay, and the GPU plugin loaded later would get this copy of the soname
/// instead of the one its RUNPATH names.
SoftwareComponent library_version(const std::vector<std::string>& names, const char* fn,
                                  bool by_pointer, std::string (*text)(long long)) {
  std::string tried;
  for (const auto& name : names) {
    void* h = dlmopen(LM_ID_NEWLM, name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      tried += (tried.empty() ? "" : "; ") + std::string(e ? e : name + ": cannot load");
      continue;
    }
    void* sym = dlsym(h, fn);
    long long v = 0;
    if (sym && by_pointer) {
      int out = 0;
      if (reinterpret_cast<int (*)(int*)>(sym)(&out) == 0) v = out;
    } else if (sym) {
      v = static_cast<long long>(reinterpret_cast<size_t (*)()>(sym)());
    }
    dlclose(h);
    if (!sym) return {"present", std::nullopt, name + " loaded, but it has no " + fn};
    return present(text(v), name + ": " + fn + " = " + std::to_string(v));
  }
  return absent(tried);
}

/// Runs `argv` (argv[0] looked up on PATH) for at most `timeout_s`; "" and `why` when it did not
/// run or failed.
std::string command_output(std::vector<std::string> argv, double timeout_s, std::string& why) {
  const std::string path = find_on_path(argv[0]);
  if (path.empty()) {
    why = argv[0] + " not found on PATH";
    return "";
  }
  argv[0] = path;
  char tmpl[] = "/tmp/cbsoftware.XXXXXX";
  if (!mkdtemp(tmpl)) {
    why = std::string("cannot make a capture directory: ") + std::strerror(errno);
    return "";
  }
  ProcessResult r = run_process(argv, {}, "", tmpl, timeout_s);
  std::error_code ec;
  fs::remove_all(tmpl, ec);
  if (r.timed_out) {
    why = path + " ran past " + std::to_string(static_cast<int>(timeout_s)) + " s: killed";
  } else if (r.exit_code != 0) {
    std::string err = r.err.substr(0, r.err.find_last_not_of(" \n") + 1);
    if (auto nl = err.rfind('\n'); nl != std::string::npos) err = err.substr(nl + 1);
    why = path + " exited " + std::to_string(r.exit_code) + (err.empty() ? "" : ": " + err);
  } else {
    return r.out;
  }
  return "";
}

SoftwareComponent pytorch(const SoftwareProbeOptions& opt, std::optional<std::string>& cuda) {
  std::string why;
  const std::string out = command_output(
      {"python3", "-c", "import torch; print(torch.__version__); print(torch.version.cuda)"},
      opt.command_timeout_s, why);
  if (out.empty()) return absent(why.empty() ? "python3 printed nothing" : why);
  std::istringstream lines(out);
  std::string version, built_for;
  std::getline(lines, version);
  std::getline(lines, built_for);
  if (!built_for.empty() && built_for != "None") cuda = built_for;
  return present(version, "python3 -c 'import torch'" +
                              std::string(cuda ? "" : ": torch.version.cuda is None (CPU build)"));
}

SoftwareComponent container_toolkit(const SoftwareProbeOptions& opt) {
  std::string why;
  const std::string out = command_output({"nvidia-ctk", "--version"}, opt.command_timeout_s, why);
  if (out.empty()) return absent(why.empty() ? "nvidia-ctk printed nothing" : why);
  return present(container_toolkit_version(out), "nvidia-ctk --version");
}

/// The container runtimes whose sockets exist below fs_root, with the version of the first one's
/// command where it is on PATH.
SoftwareComponent container_runtime(const SoftwareProbeOptions& opt) {
  struct Runtime {
    const char *name, *socket, *command;
  };
  const Runtime runtimes[] = {{"containerd", "/run/containerd/containerd.sock", "containerd"},
                              {"cri-o", "/run/crio/crio.sock", "crio"},
                              {"docker", "/run/docker.sock", "docker"},
                              {"podman", "/run/podman/podman.sock", "podman"}};
  std::string found, version, tried;
  for (const auto& r : runtimes) {
    struct stat st {};
    const std::string path = below(opt.fs_root, r.socket);
    tried += std::string(tried.empty() ? "" : ", ") + r.socket;
    if (::stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    found += std::string(found.empty() ? "" : ", ") + r.name + " (" + r.socket + ")";
    std::string why;
    if (version.empty()) version = first_version(command_output({r.command, "--version"}, 5, why));
  }
  if (found.empty()) return absent("no container runtime socket: " + tried);
  return present(version, found);
}

/// Kubernetes on this node: the kubelet's device-plugin registration socket exists.
SoftwareComponent kubernetes(const std::string& plugins_dir) {
  struct stat st {};
  const std::string kubelet = plugins_dir + "/kubelet.sock";
  if (::stat(kubelet.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return present("", kubelet);
  return absent("no kubelet on this node: " + kubelet + " is not a socket");
}

/// NVIDIA's device plugin registers a socket nvidia*.sock in the kubelet's device-plugins dir.
SoftwareComponent device_plugin(const std::string& plugins_dir, bool k8s) {
  std::error_code ec;
  for (fs::directory_iterator it(plugins_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("nvidia", 0) == 0 && it->is_socket(ec)) return present("", it->path().string());
  }
  if (!k8s) return {"not applicable", std::nullopt, "no Kubernetes on this node"};
  return absent("no nvidia*.sock in " + plugins_dir);
}

/// GPU feature discovery writes its labels to node-feature-discovery's features.d/gfd.
SoftwareComponent feature_discovery(const std::string& fs_root, bool k8s) {
  const std::string labels =
      below(fs_root, "/etc/kubernetes/node-feature-discovery/features.d/gfd");
  std::error_code ec;
  if (fs::exists(labels, ec)) return present("", labels);
  if (!k8s) return {"not applicable", std::nullopt, "no Kubernetes on this node"};
  return absent(labels + " not found");
}

/// host and port of an http:// URL, and its path ("/metrics").
bool split_url(const std::string& url, std::string& host, std::string& port, std::string& path) {
  static const std::regex re(R"(^http://([^/:]+)(?::([0-9]+))?(/.*)?$)");
  std::smatch m;
  if (!std::regex_match(url, m, re)) return false;
  host = m[1], port = m[2].matched ? m[2].str() : "80", path = m[3].matched ? m[3].str() : "/";
  return true;
}

/// One HTTP/1.0 GET within `timeout_s` in all; the response, or "" and `why`.
std::string http_get(const std::string& url, double timeout_s, std::string& why) {
  std::string host, port, path;
  if (!split_url(url, host, port, path)) return why = url + ": not an http:// URL", "";
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return why = host + ": " + gai_strerror(rc), "";
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  auto left_ms = [&] {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  end - std::chrono::steady_clock::now())
                  .count();
    return static_cast<int>(std::max<long long>(0, ms));
  };
  std::string out;
  why = "connection refused";
  for (addrinfo* a = res; a && out.empty(); a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    bool up = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ||
              (errno == EINPROGRESS && ::poll(&p, 1, left_ms()) == 1 &&
               ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0);
    if (!up) {
      why = err ? std::strerror(err) : "no connection within the timeout";
      ::close(fd);
      continue;
    }
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: " + host + "\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      p.events = POLLIN;
      while (out.size() < (64u << 20) && ::poll(&p, 1, left_ms()) == 1) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
      }
      if (left_ms() == 0) why = "no complete answer within the timeout", out.clear();
    }
    ::close(fd);
  }
  freeaddrinfo(res);
  return out;
}

SoftwareComponent dcgm_exporter(const SoftwareProbeOptions& opt) {
  std::string url = opt.dcgm_url;
  if (url.empty()) {
    const char* e = std::getenv("CLUSTERBENCH_DCGM_EXPORTER_URL");
    url = e && *e ? e : "http://localhost:9400/metrics";
  }
  std::string why;
  const std::string response = http_get(url, opt.http_timeout_s, why);
  if (response.empty()) return {"down", std::nullopt, url + ": " + why};
  if (!exports_metric(response, "DCGM_FI_DEV_GPU_TEMP", why))
    return {"down", std::nullopt, url + ": " + why};
  return {"up", std::nullopt, url + " exports DCGM_FI_DEV_GPU_TEMP"};
}

}  // namespace

std::string cudnn_version_text(long long v) {
  if (v <= 0) return "";
  const long long major_div = v >= 90000 ? 10000 : 1000;
  return std::to_string(v / major_div) + "." + std::to_string(v % major_div / 100) + "." +
         std::to_string(v % 100);
}

std::string nccl_version_text(long long v) {
  if (v <= 0) return "";
  const long long major_div = v >= 20900 ? 10000 : 1000;
  return std::to_string(v / major_div) + "." + std::to_string(v % major_div / 100) + "." +
         std::to_string(v % 100);
}

std::string first_version(const std::string& text) {
  static const std::regex re(R"((^|[^0-9.])([0-9]+\.[0-9]+(\.[0-9]+)?))");
  std::smatch m;
  return std::regex_search(text, m, re) ? m[2].str() : "";
}

std::string container_toolkit_version(const std::string& out) {
  static const std::regex re(R"(version ([0-9]+\.[0-9]+(\.[0-9]+)?))");
  std::smatch m;
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

bool exports_metric(const std::string& response, const std::string& metric, std::string& why) {
  const auto line_end = response.find('\n');
  const std::string status = response.substr(0, line_end);
  if (status.find(" 200") == std::string::npos) {
    why = "answered '" + valid_utf8(status.substr(0, status.find_last_not_of("\r") + 1)) + "'";
    return false;
  }
  auto body = response.find("\r\n\r\n");
  std::istringstream lines(body == std::string::npos ? "" : response.substr(body + 4));
  for (std::string l; std::getline(lines, l);)
    if (l.rfind(metric, 0) == 0 && l.size() > metric.size() &&
        (l[metric.size()] == '{' || l[metric.size()] == ' '))
      return true;
  why = "up, but " + metric + " is not exported (no GPU watched, or a reduced metric list)";
  return false;
}

SoftwareStack collect_software(const SoftwareProbeOptions& opt) {
  SoftwareStack s;
  s.cudnn = library_version({"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}, "cudnnGetVersion",
                            false, cudnn_version_text);
  s.nccl =
      library_version({"libnccl.so.2", "libnccl.so"}, "ncclGetVersion", true, nccl_version_text);
  s.pytorch = pytorch(opt, s.pytorch_cuda);
  s.container_runtime = container_runtime(opt);
  const std::string plugins = below(opt.fs_root, "/var/lib/kubelet/device-plugins");
  s.kubernetes = kubernetes(plugins);
  const bool k8s = s.kubernetes.state == "present";
  s.device_plugin = device_plugin(plugins, k8s);
  s.gpu_feature_discovery = feature_discovery(opt.fs_root, k8s);
  s.container_toolkit = container_toolkit(opt);
  if (s.container_toolkit.state == "absent" && !k8s)
    s.container_toolkit = {"not applicable", std::nullopt,
                           "no Kubernetes on this node (" + s.container_toolkit.detail + ")"};
  s.dcgm_exporter = dcgm_exporter(opt);
  for (const char* v : {"NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME"}) {
    const char* e = std::getenv(v);
    s.nccl_env[v] = e ? valid_utf8(e) : "unset";
  }
  return s;
}

}  // namespace clusterbench
