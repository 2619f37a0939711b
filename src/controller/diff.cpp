#include "controller/diff.hpp"

#include <algorithm>
#include <cstdint>

#include "document/yaml_writer.hpp"

namespace gpubank::controller {
namespace {

const char* const kMetadataFields[] = {"name", "namespace", "labels", "annotations"};

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

enum class Op { Keep, Remove, Add };
struct Edit {
  Op op;
  std::size_t a;  // index in before (Keep, Remove)
  std::size_t b;  // index in after (Keep, Add)
};

std::vector<Edit> edit_script(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b,
                              std::size_t max_lines) {
  std::vector<Edit> edits;
  if (a.size() + b.size() > max_lines) {
    for (std::size_t i = 0; i < a.size(); ++i) edits.push_back({Op::Remove, i, 0});
    for (std::size_t j = 0; j < b.size(); ++j) edits.push_back({Op::Add, a.size(), j});
    return edits;
  }
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
  const std::size_t w = b.size() + 1;
  std::vector<std::uint32_t> lcs((a.size() + 1) * w, 0);
  for (std::size_t i = a.size(); i-- > 0;) {
    for (std::size_t j = b.size(); j-- > 0;) {
      lcs[i * w + j] = a[i] == b[j] ? lcs[(i + 1) * w + j + 1] + 1 : std::max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    }
  }
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      edits.push_back({Op::Keep, i++, j++});
    } else if (j < b.size() && (i == a.size() || lcs[i * w + j + 1] >= lcs[(i + 1) * w + j])) {
      edits.push_back({Op::Add, i, j++});
    } else {
      edits.push_back({Op::Remove, i++, j});
    }
  }
  // Removals before additions within a run of changes, as diff -u prints them.
  for (std::size_t s = 0; s < edits.size();) {
    if (edits[s].op == Op::Keep) {
      ++s;
      continue;
    }
    std::size_t e = s;
    while (e < edits.size() && edits[e].op != Op::Keep) ++e;
    std::stable_partition(edits.begin() + static_cast<std::ptrdiff_t>(s), edits.begin() + static_cast<std::ptrdiff_t>(e),
                          [](const Edit& x) { return x.op == Op::Remove; });
    s = e;
  }
  return edits;
}

std::string range(std::size_t start, std::size_t count) {
  // diff -u: an empty range is "start,0" where start is the line before it.
  if (count == 0) return std::to_string(start) + ",0";
  if (count == 1) return std::to_string(start + 1);
  return std::to_string(start + 1) + "," + std::to_string(count);
}

}  // namespace

nlohmann::json project(const nlohmann::json& live, const nlohmann::json& applied) {
  if (!applied.is_object() || !live.is_object()) return live;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : applied.items()) {
    const auto it = live.find(key);
    if (it == live.end()) continue;
    if (key == "metadata" && value.is_object() && it->is_object()) {
      nlohmann::json meta = nlohmann::json::object();
      for (const char* field : kMetadataFields) {
        if (!value.contains(field) || !it->contains(field)) continue;
        meta[field] = project((*it)[field], value[field]);
      }
      out[key] = std::move(meta);
    } else if (value.is_object() && it->is_object()) {
      out[key] = project(*it, value);
    } else {
      out[key] = *it;
    }
  }
  return out;
}

std::string to_yaml_text(const nlohmann::json& object) {
  return doc::to_yaml(nlohmann::ordered_json::parse(object.dump()));
}

std::string unified_diff(std::string_view before, std::string_view after, std::string_view before_name,
                         std::string_view after_name, std::size_t max_lines) {
  if (before == after) return {};
  const std::vector<std::string_view> a = split_lines(before);
  const std::vector<std::string_view> b = split_lines(after);
  const std::vector<Edit> edits = edit_script(a, b, max_lines);
  constexpr std::size_t kContext = 3;
  std::string out = "--- " + std::string(before_name) + "\n+++ " + std::string(after_name) + "\n";
  std::size_t s = 0;
  while (s < edits.size()) {
    while (s < edits.size() && edits[s].op == Op::Keep) ++s;
    if (s == edits.size()) break;
    // A hunk: from kContext lines before this change to kContext after the last change
    // that is within 2*kContext unchanged lines of the previous one.
    const std::size_t begin = s >= kContext ? s - kContext : 0;
    std::size_t end = s;
    std::size_t keep_run = 0;
    for (std::size_t k = s; k < edits.size(); ++k) {
      if (edits[k].op == Op::Keep) {
        if (++keep_run > 2 * kContext) break;
      } else {
        keep_run = 0;
        end = k + 1;
      }
    }
    const std::size_t stop = std::min(edits.size(), end + kContext);
    std::size_t a_count = 0;
    std::size_t b_count = 0;
    std::string body;
    for (std::size_t k = begin; k < stop; ++k) {
      const Edit& e = edits[k];
      if (e.op == Op::Keep) {
        body += " " + std::string(a[e.a]) + "\n";
        ++a_count;
        ++b_count;
      } else if (e.op == Op::Remove) {
        body += "-" + std::string(a[e.a]) + "\n";
        ++a_count;
      } else {
        body += "+" + std::string(b[e.b]) + "\n";
        ++b_count;
      }
    }
    out += "@@ -" + range(edits[begin].a, a_count) + " +" + range(edits[begin].b, b_count) + " @@\n" + body;
    s = stop;
  }
  return out;
}

}  // namespace gpubank::controller
