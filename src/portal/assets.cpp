#include "portal/assets.hpp"

namespace gpubank::portal {

namespace generated {
extern const Asset kAssets[];
extern const std::size_t kAssetCount;
}  // namespace generated

std::span<const Asset> assets() { return {generated::kAssets, generated::kAssetCount}; }

std::optional<Asset> find_asset(std::string_view path) {
  for (const Asset& a : assets()) {
    if (a.path == path) return a;
  }
  return std::nullopt;
}

std::optional<std::string_view> content_type_of(std::string_view path) {
  const auto dot = path.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view ext = path.substr(dot);
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  return std::nullopt;
}

bool plain_asset_name(std::string_view path) {
  const auto dot = path.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || path.size() > 200) return false;
  bool segment_empty = true;
  for (std::size_t i = 0; i < dot; ++i) {
    const char c = path[i];
    if (c == '/') {
      if (segment_empty) return false;
      segment_empty = true;
    } else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-') {
      segment_empty = false;
    } else {
      return false;
    }
  }
  if (segment_empty) return false;
  for (std::size_t i = dot + 1; i < path.size(); ++i) {
    if (!(path[i] >= 'a' && path[i] <= 'z')) return false;
  }
  return true;
}

}  // namespace gpubank::portal
