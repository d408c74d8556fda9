// The software stack probes (software.hpp).
#include "env/software.hpp"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
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
    if (!sym) {  // a file of that name that is not the library (another library, a stub)
      tried += (tried.empty() ? "" : "; ") + name + " loaded, but it has no " + fn;
      continue;
    }
    return present(text(v), name + ": " + fn + " = " + std::to_string(v));
  }
  return absent(tried);
}

/// What of a tool's output is parsed: a version is in its first lines.
constexpr size_t kMaxOutput = 4096;

/// `text` cut to 200 bytes (a reason, not a dump), on a UTF-8 boundary.
std::string clip(const std::string& text) {
  if (text.size() <= 200) return text;
  size_t n = 200;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n) + "...";
}

/// A version token: digits and dots, starting with a digit, with an optional local part after
/// '+' or '-' ("2.3.1+cu121", "12.1", "1.14.3"), at most 64 bytes; "" otherwise.
std::string version_token(const std::string& text) {
  if (text.empty() || text.size() > 64 || !std::isdigit(static_cast<unsigned char>(text[0])))
    return "";
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (text.find('.') == std::string::npos || text.find('.') >= i) return "";
  for (size_t j = i; j < text.size(); ++j) {
    const unsigned char c = static_cast<unsigned char>(text[j]);
    if (!(std::isalnum(c) || c == '.' || c == '+' || c == '-' || c == '_')) return "";
  }
  if (i < text.size() && text[i] != '+' && text[i] != '-') return "";
  return text;
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
  } else if (r.signal != 0) {
    why = path + " was killed by signal " + std::to_string(r.signal);
  } else if (r.exit_code != 0) {
    std::string err = r.err.substr(0, r.err.find_last_not_of(" \n") + 1);
    if (auto nl = err.rfind('\n'); nl != std::string::npos) err = err.substr(nl + 1);
    why = path + " exited " + std::to_string(r.exit_code) + (err.empty() ? "" : ": " + clip(err));
  } else {
    return r.out.substr(0, kMaxOutput);
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
  std::string first, built_for;
  std::getline(lines, first);
  std::getline(lines, built_for);
  const std::string version = version_token(first);
  if (version.empty())
    return absent("python3 -c 'import torch' printed '" + clip(valid_utf8(first)) +
                  "', not a version");
  if (!version_token(built_for).empty()) cuda = built_for;
  return present(version, "python3 -c 'import torch'" +
                              std::string(cuda ? "" : ": torch.version.cuda is None (CPU build)"));
}

/// DeepSpeed's version from its distribution metadata (importlib.metadata: no import of the
/// package, which would load torch and compile nothing but take seconds).
SoftwareComponent deepspeed(const SoftwareProbeOptions& opt) {
  std::string why;
  const std::string out = command_output(
      {"python3", "-c", "import importlib.metadata as m; print(m.version('deepspeed'))"},
      opt.command_timeout_s, why);
  const std::string version = version_token(out.substr(0, out.find('\n')));
  if (version.empty())
    return absent(why.empty() ? "python3: no deepspeed distribution ('" +
                                    clip(valid_utf8(out.substr(0, out.find('\n')))) + "')"
                              : why);
  return present(version, "python3: importlib.metadata.version('deepspeed')");
}

/// The version of a component that runs as a container (`repo`: its image's repository name),
/// from the images the runtime runs; the image is added to its detail, or why none says.
void add_image_version(SoftwareComponent& c, const std::vector<std::string>& images,
                       const std::string& repo, const std::string& fs_root) {
  if (c.state != "present" && c.state != "up") return;
  std::string image;
  const std::string v = image_version(images, repo, image);
  if (!v.empty()) {
    c.version = v;
    c.detail += "; image " + image;
  } else {
    c.unknown["version"] = "no running container of an image named " + repo +
                           " in containerd's or CRI-O's state below " +
                           (fs_root.empty() ? "/" : fs_root);
  }
}

/// The installed CUDA toolkit (not the driver's CUDA API version): /usr/local/cuda/version.json
/// ("cuda": {"version": "12.2.140"}, CUDA 11.1 and later), else its version.txt ("CUDA Version
/// 11.0.228"), below fs_root; else `nvcc --version` ("release 12.2, V12.2.140") on PATH.
SoftwareComponent cuda_toolkit(const std::string& fs_root) {
  const std::string dir = below(fs_root, "/usr/local/cuda");
  std::ifstream vj(dir + "/version.json");
  if (vj) {
    const json j = json::parse(vj, nullptr, false);
    const json* v = j.is_object() && j.contains("cuda") && j["cuda"].is_object()
                        ? &j["cuda"]["version"]
                        : nullptr;
    if (v && v->is_string() && !version_token(v->get<std::string>()).empty())
      return present(version_token(v->get<std::string>()), dir + "/version.json");
  }
  auto word = [](const std::string& t) {
    return version_token(t.substr(0, t.find_first_of(" \t\r\n,")));
  };
  std::ifstream vt(dir + "/version.txt");
  std::string line;
  if (vt && std::getline(vt, line) && line.rfind("CUDA Version ", 0) == 0 &&
      !word(line.substr(13)).empty())
    return present(word(line.substr(13)), dir + "/version.txt");
  std::string why;
  for (const std::string nvcc : {dir + "/bin/nvcc", std::string("nvcc")}) {
    if (nvcc[0] == '/' && ::access(nvcc.c_str(), X_OK) != 0) continue;
    if (nvcc[0] != '/' && !(fs_root.empty() || fs_root == "/")) continue;  // PATH is this host's
    const std::string out = command_output({nvcc, "--version"}, 10, why);
    const auto at = out.find(", V");
    if (at != std::string::npos && !word(out.substr(at + 3)).empty())
      return present(word(out.substr(at + 3)), nvcc + " --version");
  }
  return absent("no CUDA toolkit: no " + dir + "/version.json or version.txt, and nvcc " +
                (why.empty() ? "printed no version" : why));
}

SoftwareComponent container_toolkit() {
  std::string why;
  const std::string out = command_output({"nvidia-ctk", "--version"}, 5, why);
  if (out.empty()) return absent(why.empty() ? "nvidia-ctk printed nothing" : why);
  const std::string version = container_toolkit_version(out);
  if (version.empty())
    return absent("nvidia-ctk --version printed no 'NVIDIA Container Toolkit ... version': '" +
                  clip(valid_utf8(out.substr(0, out.find('\n')))) + "'");
  return present(version, "nvidia-ctk --version");
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
  std::string found, version, tried, how;
  for (const auto& r : runtimes) {
    struct stat st {};
    const std::string path = below(opt.fs_root, r.socket);
    tried += std::string(tried.empty() ? "" : ", ") + r.socket;
    if (::stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    const bool first = found.empty();
    found += std::string(first ? "" : ", ") + r.name + " (" + r.socket + ")";
    if (!first) continue;  // the version is the first runtime's, from its own command
    std::string why;
    version = version_token(first_version(command_output({r.command, "--version"}, 5, why)));
    how = version.empty()
              ? "; no version: " +
                    (why.empty() ? std::string(r.command) + " --version printed none" : why)
              : "; version from " + std::string(r.command) + " --version";
  }
  if (found.empty()) return absent("no container runtime socket: " + tried);
  return present(version, found + how);
}

/// Kubernetes on this node: the kubelet's device-plugin registration socket exists. Unknown
/// (state "") when the directory cannot be read: absent is only what was seen to be absent.
SoftwareComponent kubernetes(const std::string& plugins_dir) {
  struct stat st {};
  const std::string kubelet = plugins_dir + "/kubelet.sock";
  if (::stat(kubelet.c_str(), &st) == 0)
    return S_ISSOCK(st.st_mode)
               ? present("", kubelet)
               : absent("no kubelet on this node: " + kubelet + " is not a socket");
  if (errno == ENOENT || errno == ENOTDIR) return absent("no kubelet on this node: no " + kubelet);
  return {"", std::nullopt, "cannot tell: " + kubelet + ": " + std::strerror(errno)};
}

/// NVIDIA's device plugin registers a socket nvidia*.sock in the kubelet's device-plugins dir.
SoftwareComponent device_plugin(const std::string& plugins_dir, bool k8s) {
  std::error_code ec;
  for (fs::directory_iterator it(plugins_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("nvidia", 0) == 0 && it->is_socket(ec)) return present("", it->path().string());
  }
  if (!k8s) return {"not applicable", std::nullopt, "no Kubernetes on this node"};
  if (ec) return {"", std::nullopt, "cannot tell: " + plugins_dir + ": " + ec.message()};
  return absent("no nvidia*.sock in " + plugins_dir);
}

/// GPU feature discovery writes its labels to node-feature-discovery's features.d/gfd.
SoftwareComponent feature_discovery(const std::string& fs_root, bool k8s) {
  const std::string labels =
      below(fs_root, "/etc/kubernetes/node-feature-discovery/features.d/gfd");
  std::error_code ec;
  if (fs::is_regular_file(labels, ec)) return present("", labels);
  if (!k8s) return {"not applicable", std::nullopt, "no Kubernetes on this node"};
  return absent(labels + " is not a file");
}

/// Host, port and path of "http://HOST[:PORT][/PATH]"; false (and why) when it is not one. Only
/// numeric addresses and "localhost" are probed: a name lookup cannot be bounded in time.
bool split_url(const std::string& url, std::string& host, int& port, std::string& path,
               std::string& why) {
  const std::string scheme = "http://";
  why = "not an http://HOST:PORT/PATH URL";
  if (url.size() > 2048 || url.compare(0, scheme.size(), scheme) != 0) return false;
  const size_t start = scheme.size(), slash = url.find('/', start);
  std::string authority = url.substr(start, slash == std::string::npos ? slash : slash - start);
  path = slash == std::string::npos ? "/" : url.substr(slash);
  port = 80;
  if (authority.size() > 1 && authority.front() == '[') {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos) return false;
    host = authority.substr(1, close - 1);
    authority = authority.substr(close + 1);
    if (!authority.empty() && authority.front() != ':') return false;
  } else {
    host = authority.substr(0, authority.find(':'));
    authority = authority.find(':') == std::string::npos ? "" : authority.substr(host.size());
  }
  if (!authority.empty()) {  // ":PORT"
    const std::string digits = authority.substr(1);
    if (digits.empty() || digits.size() > 5 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return false;
    port = std::stoi(digits);
  }
  if (host.empty() || port < 1 || port > 65535) return false;
  if (host == "localhost") host = "127.0.0.1";
  in6_addr a6{};
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) != 1 && inet_pton(AF_INET6, host.c_str(), &a6) != 1)
    return why = "host " + clip(host) + ": only numeric addresses and localhost are probed", false;
  return true;
}

/// Connects `fd` to `addr` before `ms` milliseconds pass; "" or why not.
std::string connect_within(int fd, const sockaddr* addr, socklen_t len, int ms) {
  if (::connect(fd, addr, len) == 0) return "";
  if (errno != EINPROGRESS) return std::strerror(errno);
  pollfd p{fd, POLLOUT, 0};
  if (::poll(&p, 1, ms) != 1) return "no connection within the timeout";
  int err = 0;
  socklen_t n = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &n) != 0) return std::strerror(errno);
  return err ? std::strerror(err) : "";
}

/// One HTTP/1.0 GET within `timeout_s` in all; the whole response (at most 16 MiB), or "" and
/// `why`.
std::string http_get(const std::string& url, double timeout_s, std::string& why) {
  std::string host, path;
  int port = 0;
  if (!split_url(url, host, port, path, why)) return "";
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
    return why = host + ": " + gai_strerror(rc), "";
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  auto left_ms = [&] {
    return static_cast<int>(std::max<long long>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(end -
                                                                 std::chrono::steady_clock::now())
               .count()));
  };
  int fd = ::socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  why =
      fd < 0 ? std::strerror(errno) : connect_within(fd, res->ai_addr, res->ai_addrlen, left_ms());
  freeaddrinfo(res);
  std::string out;
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: " + host + "\r\n\r\n";
  if (why.empty() &&
      ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
    constexpr size_t kMax = 16u << 20;
    char buf[65536];
    pollfd p{fd, POLLIN, 0};
    ssize_t n = 1;
    while (out.size() <= kMax && ::poll(&p, 1, left_ms()) == 1 &&
           (n = ::recv(fd, buf, sizeof buf, 0)) > 0)
      out.append(buf, static_cast<size_t>(n));
    if (n < 0)
      why = std::string("reading the answer: ") + std::strerror(errno);
    else if (out.size() > kMax)
      why = "an answer over 16 MiB";
    else if (n > 0)  // the server did not close: the time ran out
      why = "no complete answer within the timeout";
    else if (out.empty())
      why = "the connection was closed without an answer";
    if (!why.empty()) out.clear();
  } else if (why.empty()) {
    why = std::string("cannot send the request: ") + std::strerror(errno);
  }
  if (fd >= 0) ::close(fd);
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
  if (response.empty()) return {"down", std::nullopt, clip(valid_utf8(url)) + ": " + why};
  if (!exports_metric(response, "DCGM_FI_DEV_GPU_TEMP", why))
    return {"down", std::nullopt, clip(valid_utf8(url)) + ": " + why};
  return {"up", std::nullopt, clip(valid_utf8(url)) + " exports DCGM_FI_DEV_GPU_TEMP"};
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
  for (size_t i = 0; i < text.size() && i < kMaxOutput; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i])) ||
        (i > 0 && (std::isdigit(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '.')))
      continue;
    size_t j = i;
    while (j < text.size() && j - i < 64 &&
           (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.'))
      ++j;
    std::string v = text.substr(i, j - i);
    while (!v.empty() && v.back() == '.') v.pop_back();
    if (v.find('.') != std::string::npos && j - i < 64) return v;
    i = j;
  }
  return "";
}

std::string container_toolkit_version(const std::string& out) {
  // "NVIDIA Container Toolkit CLI version 1.14.3" (older: "NVIDIA Container Toolkit version").
  const std::string head = out.substr(0, out.find('\n'));
  const std::string key = "Container Toolkit";
  const size_t at = head.find(key);
  if (at == std::string::npos) return "";
  const size_t v = head.find("version ", at + key.size());
  if (v == std::string::npos) return "";
  const std::string rest = head.substr(v + 8);
  return version_token(rest.substr(0, rest.find_first_of(" \t\r")));
}

bool exports_metric(const std::string& response, const std::string& metric, std::string& why) {
  const auto line_end = response.find('\n');
  const std::string status = response.substr(0, std::min<size_t>(line_end, 200));
  const size_t sp = status.find(' ');
  if (status.compare(0, 5, "HTTP/") != 0 || sp == std::string::npos ||
      status.compare(sp + 1, 3, "200") != 0 ||
      (status.size() > sp + 4 && status[sp + 4] != ' ' && status[sp + 4] != '\r')) {
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
  s.cuda_toolkit = cuda_toolkit(opt.fs_root);
  s.container_toolkit = container_toolkit();
  // The toolkit is what gives a container the GPUs, under Kubernetes or plain Docker/containerd
  // (the guide installs it for Docker): not applicable only where neither runs.
  if (s.container_toolkit.state == "absent" && !k8s && s.container_runtime.state != "present")
    s.container_toolkit = {
        "not applicable", std::nullopt,
        "no Kubernetes and no container runtime on this node (" + s.container_toolkit.detail + ")"};
  if (s.kubernetes.state.empty())  // whether the node runs Kubernetes is not known
    for (SoftwareComponent* c : {&s.device_plugin, &s.gpu_feature_discovery, &s.container_toolkit})
      if (c->state != "present") *c = {"", std::nullopt, s.kubernetes.detail};
  s.dcgm_exporter = dcgm_exporter(opt);
  s.deepspeed = deepspeed(opt);
  s.os = os_release(opt.fs_root);
  const std::vector<std::string> images = running_images(opt.fs_root);
  add_image_version(s.device_plugin, images, "k8s-device-plugin", opt.fs_root);
  add_image_version(s.gpu_feature_discovery, images, "gpu-feature-discovery", opt.fs_root);
  add_image_version(s.dcgm_exporter, images, "dcgm-exporter", opt.fs_root);
  // Why a version is null, where a row reads one (env rows: a reason "not applicable: ..." is
  // a row that does not apply).
  for (SoftwareComponent* c :
       {&s.cudnn, &s.nccl, &s.pytorch, &s.container_toolkit, &s.container_runtime, &s.kubernetes,
        &s.device_plugin, &s.gpu_feature_discovery, &s.dcgm_exporter, &s.cuda_toolkit,
        &s.deepspeed})
    if (!c->version && !c->unknown.count("version"))
      c->unknown["version"] = c->state.empty() ? "not probed: " + c->detail
                              : c->state == "present" || c->state == "up"
                                  ? "not found: " + c->detail
                                  : c->state + ": " + c->detail;
  if (!s.pytorch_cuda)
    s.unknown["pytorch_cuda"] = s.pytorch.state == "present"
                                    ? "torch.version.cuda is None (a CPU build of PyTorch)"
                                    : "PyTorch " + s.pytorch.unknown["version"];
  for (const char* v : {"NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME"}) {
    const char* e = std::getenv(v);
    s.nccl_env[v] = e ? valid_utf8(e) : "unset";
  }
  return s;
}

}  // namespace clusterbench
