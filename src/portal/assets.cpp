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

}  // namespace gpubank::portal
