// The portal's static files (the repository's portal/ folder: its page, ES modules and
// style), built into the binary so `gpubank up` and the controller serve them with no files
// installed beside it. Generated at build time by embed_assets.cmake; looked up by name only
// (a path is never resolved on disk).
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace gpubank::portal {

struct Asset {
  std::string_view path;          // relative to portal/, e.g. "views/overview.js"
  std::string_view content_type;  // from the extension
  std::string_view body;
};

[[nodiscard]] std::span<const Asset> assets();
[[nodiscard]] std::optional<Asset> find_asset(std::string_view path);

// The content type of a portal file by its extension (.html, .js, .css, .svg, .png); none
// for any other. The build's embedding uses the same table (embed_assets.cmake).
[[nodiscard]] std::optional<std::string_view> content_type_of(std::string_view path);
// Segments of [A-Za-z0-9_-] separated by "/", then one extension: what a portal file may be
// called (no "..", no hidden files, no empty segments).
[[nodiscard]] bool plain_asset_name(std::string_view path);

}  // namespace gpubank::portal
