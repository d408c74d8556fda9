// Versions of the software stack beyond its libraries (software.hpp): the operating system
// (os-release), DeepSpeed (its distribution metadata), and the NVIDIA components that run as
// containers (the device plugin, GPU feature discovery, the DCGM exporter), from the image tags
// in the container runtime's state below fs_root.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "env/software.hpp"
#include "records/utf8.hpp"

namespace clusterbench {

namespace fs = std::filesystem;

namespace {

/// `path` (absolute) below `root`.
std::string under_root(const std::string& root, const std::string& path) {
  return root == "/" || root.empty() ? path : root + path;
}

/// A value of os-release: unquoted, its escapes undone.
std::string os_release_value(std::string v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
    v = v.substr(1, v.size() - 2);
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += v[i] == '\\' && i + 1 < v.size() ? v[++i] : v[i];
  return valid_utf8(out.substr(0, 200));
}

/// The image name CRI gave a container, from its OCI config.json annotations ("" when none).
std::string cri_image(const fs::path& config) {
  std::error_code ec;
  if (fs::file_size(config, ec) > (4u << 20) || ec) return "";
  std::ifstream in(config);
  const json j = json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("annotations") || !j["annotations"].is_object()) return "";
  for (const char* key : {"io.kubernetes.cri.image-name", "io.kubernetes.cri-o.ImageName"}) {
    auto it = j["annotations"].find(key);
    if (it != j["annotations"].end() && it->is_string()) return valid_utf8(it->get<std::string>());
  }
  return "";
}

}  // namespace

SoftwareComponent os_release(const std::string& fs_root) {
  std::string tried;
  for (const char* rel : {"/etc/os-release", "/usr/lib/os-release"}) {
    const std::string path = under_root(fs_root, rel);
    std::ifstream in(path);
    if (!in) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    std::map<std::string, std::string> kv;
    std::string line;
    while (std::getline(in, line) && kv.size() < 200)
      if (auto eq = line.find('='); eq != std::string::npos && line[0] != '#')
        kv[line.substr(0, eq)] = os_release_value(line.substr(eq + 1));
    const std::string id = kv["ID"], version = kv["VERSION_ID"];
    const std::string pretty = kv["PRETTY_NAME"].empty() ? id + " " + version : kv["PRETTY_NAME"];
    SoftwareComponent c{"present", std::nullopt, path + ": " + pretty, {}};
    if (id.empty() || version.empty())
      c.unknown["version"] = path + " has no ID or VERSION_ID";
    else
      c.version = id + " " + version;
    return c;
  }
  return {"", std::nullopt, "no " + tried, {{"version", "not read: no " + tried}}};
}

std::vector<std::string> running_images(const std::string& fs_root) {
  // containerd's shim v2 bundles (Kubernetes' namespace k8s.io), CRI-O's container state.
  std::vector<std::string> images;
  const std::vector<std::pair<std::string, std::string>> kBundles = {
      {"/run/containerd/io.containerd.runtime.v2.task/k8s.io", "config.json"},
      {"/run/containers/storage/overlay-containers", "userdata/config.json"}};
  for (const auto& [dir, file] : kBundles) {
    std::error_code ec;
    for (fs::directory_iterator it(under_root(fs_root, dir), ec), end; !ec && it != end;
         it.increment(ec)) {
      if (images.size() >= 4096) break;
      std::string image = cri_image(it->path() / file);
      if (!image.empty()) images.push_back(image);
    }
  }
  std::sort(images.begin(), images.end());
  images.erase(std::unique(images.begin(), images.end()), images.end());
  return images;
}

std::string image_version(const std::vector<std::string>& images, const std::string& repo,
                          std::string& image) {
  for (const auto& ref : images) {
    const std::string name = ref.substr(0, ref.find('@'));
    const auto colon = name.rfind(':'), slash = name.rfind('/');
    if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) continue;
    const std::string path = name.substr(0, colon), tag = name.substr(colon + 1);
    if (path.size() < repo.size() ||
        path.compare(path.size() - repo.size(), repo.size(), repo) != 0)
      continue;
    if (path.size() > repo.size() && path[path.size() - repo.size() - 1] != '/') continue;
    // "v0.14.0", "v0.14.0-ubi8", "3.1.8-3.1.5-ubuntu20.04": the numbers, without the base image.
    std::string v = tag.substr(tag[0] == 'v' ? 1 : 0);
    for (const char* base : {"-ubuntu", "-ubi", "-centos", "-distroless"})
      if (auto at = v.find(base); at != std::string::npos) v = v.substr(0, at);
    if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0]))) continue;
    image = ref;
    return v;
  }
  return "";
}

}  // namespace clusterbench
