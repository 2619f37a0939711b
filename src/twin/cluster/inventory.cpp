#include "twin/cluster/inventory.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include "core/quantity.hpp"
#include "document/decode.hpp"
#include "document/quantity_field.hpp"
#include "document/loader.hpp"
#include "document/reader.hpp"

namespace gpubank::twin::cluster {
namespace {

// A quantity field ("80Gi", 96): positive, at most `max` bytes (or units).
struct QuantityText {
  Quantity value;
};

// One entry of nodeGroups or nodes, as written.
struct MigYaml {
  std::string profile;
  int slices_per_gpu = 0;
  std::optional<QuantityText> slice_memory;
};

struct NodeYaml {
  std::string name;         // nodes[]
  std::string name_prefix;  // nodeGroups[]
  int count = 1;            // nodeGroups[]
  std::string gpu_model;
  std::string product;
  int gpus_per_node = 0;
  QuantityText gpu_memory;
  bool nvlink = false;
  std::string fabric;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  std::optional<MigYaml> mig;
  std::optional<QuantityText> cpu;
  std::optional<QuantityText> memory;
};

struct NodeGroupYaml : NodeYaml {};
struct SingleNodeYaml : NodeYaml {};

struct InventoryYaml {
  std::string kind;
  std::vector<NodeGroupYaml> node_groups;
  std::vector<SingleNodeYaml> nodes;
};

constexpr std::int64_t kMiB = 1024 * 1024;
// Generous ceilings that keep every sum far from overflow.
constexpr std::int64_t kMaxGpuMemoryMib = 4LL * 1024 * 1024;      // 4 TiB per GPU
constexpr std::int64_t kMaxCpuMilli = 100'000'000;                // 100,000 cores
constexpr std::int64_t kMaxNodeMemoryMib = 1024LL * 1024 * 1024;  // 1 PiB
constexpr std::size_t kMaxLabels = 64;
constexpr std::size_t kMaxTaints = 64;

bool is_alnum_lower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_alnum(char c) { return is_alnum_lower(c) || (c >= 'A' && c <= 'Z'); }

// Kubernetes' DNS-1123 subdomain, the rule for node names: lower-case alphanumerics, '-'
// and '.', starting and ending alphanumeric, at most 253 characters.
bool is_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253 || !is_alnum_lower(s.front()) || !is_alnum_lower(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_alnum_lower(c) || c == '-' || c == '.'; });
}

// A model or label-value-like token: [A-Za-z0-9._-], starting and ending alphanumeric.
bool is_token(std::string_view s, std::size_t max) {
  if (s.empty() || s.size() > max || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_alnum(c) || c == '-' || c == '.' || c == '_'; });
}

// Kubernetes label key: optional DNS-subdomain prefix and '/', then a name token of at
// most 63 characters.
bool is_label_key(std::string_view key) {
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) return is_token(key, 63);
  return is_subdomain(key.substr(0, slash)) && is_token(key.substr(slash + 1), 63);
}

bool is_label_value(std::string_view value) { return value.empty() || is_token(value, 63); }

int digits(std::int64_t v) {
  int n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

// "1g.10gb" -> 10 GiB in MiB; 0 when the profile does not have that form.
std::int64_t profile_memory_mib(std::string_view profile, int* compute_slices) {
  const auto g = profile.find("g.");
  if (g == std::string_view::npos || g == 0 || profile.size() < g + 5 || !profile.ends_with("gb")) return 0;
  int compute = 0;
  std::int64_t gb = 0;
  const auto c = std::from_chars(profile.data(), profile.data() + g, compute);
  const char* mem_begin = profile.data() + g + 2;
  const char* mem_end = profile.data() + profile.size() - 2;
  const auto m = std::from_chars(mem_begin, mem_end, gb);
  if (c.ec != std::errc() || c.ptr != profile.data() + g || m.ec != std::errc() || m.ptr != mem_end) return 0;
  if (compute < 1 || compute > 7 || gb < 1 || gb > 1024) return 0;
  if (compute_slices != nullptr) *compute_slices = compute;
  return gb * 1024;
}

}  // namespace
}  // namespace gpubank::twin::cluster

namespace gpubank::doc {

using twin::cluster::InventoryYaml;
using twin::cluster::MigYaml;
using twin::cluster::NodeGroupYaml;
using twin::cluster::NodeYaml;
using twin::cluster::QuantityText;
using twin::cluster::SingleNodeYaml;
using twin::cluster::Taint;
using twin::cluster::TaintEffect;

template <>
struct Codec<QuantityText> {
  static bool decode(const Field& f, QuantityText& out) {
    if (!decode_quantity(f, out.value, "\"80Gi\"")) return false;
    if (out.value.negative() || out.value.is_zero()) {
      f.error(kRuleOutOfRange, "must be greater than 0, got " + out.value.to_string());
      return false;
    }
    return true;
  }
  static Json encode(const QuantityText& v) { return v.value.to_string(); }
};

template <>
struct EnumNames<TaintEffect> {
  static constexpr std::array<std::pair<TaintEffect, std::string_view>, 3> values{{
      {TaintEffect::NoSchedule, "NoSchedule"},
      {TaintEffect::PreferNoSchedule, "PreferNoSchedule"},
      {TaintEffect::NoExecute, "NoExecute"},
  }};
};

template <>
struct Schema<Taint> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("key", s.key, NotEmpty{});
    v.optional("value", s.value);
    v.required("effect", s.effect);
  }
};

template <>
struct Schema<MigYaml> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("profile", s.profile, NotEmpty{});
    v.required("slicesPerGpu", s.slices_per_gpu, Between{1, 7});
    v.optional("sliceMemory", s.slice_memory);
  }
};

template <class V, class S>
void node_fields(V& v, S& s) {
  v.required("gpuModel", s.gpu_model, NotEmpty{});
  v.optional("product", s.product);
  v.required("gpusPerNode", s.gpus_per_node, Between{1, 16});
  v.required("gpuMemory", s.gpu_memory);
  v.optional("nvlink", s.nvlink);
  v.optional("fabric", s.fabric);
  v.optional("labels", s.labels);
  v.optional("taints", s.taints);
  v.optional("mig", s.mig);
  v.optional("cpu", s.cpu);
  v.optional("memory", s.memory);
}

template <>
struct Schema<NodeGroupYaml> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("namePrefix", s.name_prefix, NotEmpty{});
    v.required("count", s.count, Between{1, 10'000});
    node_fields(v, s);
  }
};

template <>
struct Schema<SingleNodeYaml> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("name", s.name, NotEmpty{});
    node_fields(v, s);
  }
};

template <>
struct Schema<InventoryYaml> {
  template <class V, class S>
  static void fields(V& v, S& s) {
    v.required("kind", s.kind);
    v.optional("nodeGroups", s.node_groups);
    v.optional("nodes", s.nodes);
  }
};

}  // namespace gpubank::doc

namespace gpubank::twin::cluster {
namespace {

void report(Diagnostics& out, const std::string& file, std::string_view rule, const std::string& path,
            std::string message, SourcePos pos = {}, Severity severity = Severity::Error) {
  out.push_back(Diagnostic{severity, std::string(rule), file, pos, {}, {}, path, std::move(message)});
}

// Checks one entry's fields beyond their types and builds its NodeSpec (without the name).
// Reports through ctx; the returned spec is only used when nothing was reported.
NodeSpec check_node(const NodeYaml& y, const std::string& path, doc::DecodeContext& ctx, const doc::SourceMap& map,
                    const InventoryLimits& limits) {
  const auto at = [&](const std::string& field) { return map.find(path + "." + field); };
  const auto bad = [&](std::string_view rule, const std::string& field, std::string message) {
    ctx.report(rule, at(field), path + "." + field, std::move(message));
  };
  NodeSpec n;
  n.gpu_model = y.gpu_model;
  n.product = y.product;
  n.gpus = y.gpus_per_node;
  n.nvlink = y.nvlink;
  n.fabric = y.fabric;
  n.labels = y.labels;
  n.taints = y.taints;
  if (!is_token(y.gpu_model, 63)) {
    bad(doc::kRuleInvalidFormat, "gpuModel",
        "\"" + y.gpu_model + "\" is not a model name (letters, digits, '.', '_', '-'; at most 63)");
  }
  if (!is_label_value(y.product)) {
    bad(doc::kRuleInvalidFormat, "product", "\"" + y.product + "\" is not a valid label value (at most 63 characters)");
  }
  if (!y.fabric.empty() && !is_token(y.fabric, 63)) {
    bad(doc::kRuleInvalidFormat, "fabric", "\"" + y.fabric + "\" is not a fabric id (letters, digits, '.', '_', '-')");
  }
  if (y.gpus_per_node > limits.max_gpus_per_node) {
    bad(doc::kRuleOutOfRange, "gpusPerNode",
        "must be at most " + std::to_string(limits.max_gpus_per_node) + ", got " + std::to_string(y.gpus_per_node));
  }
  const std::int64_t memory_mib = y.gpu_memory.value.value() / kMiB;
  if (memory_mib < 1 || memory_mib > kMaxGpuMemoryMib) {
    bad(doc::kRuleOutOfRange, "gpuMemory", "must be between 1Mi and 4Ti, got " + y.gpu_memory.value.to_string());
  }
  n.gpu_memory_mib = memory_mib;
  if (y.cpu) {
    n.cpu_milli = y.cpu->value.milli_value();
    if (n.cpu_milli > kMaxCpuMilli) bad(doc::kRuleOutOfRange, "cpu", "must be at most 100k, got " + y.cpu->value.to_string());
  }
  if (y.memory) {
    n.memory_mib = y.memory->value.value() / kMiB;
    if (n.memory_mib < 1 || n.memory_mib > kMaxNodeMemoryMib) {
      bad(doc::kRuleOutOfRange, "memory", "must be between 1Mi and 1Pi, got " + y.memory->value.to_string());
    }
  }
  if (y.labels.size() > kMaxLabels) {
    bad(kRuleLabel, "labels", "a node has at most " + std::to_string(kMaxLabels) + " labels, got " +
                                  std::to_string(y.labels.size()));
  }
  for (const auto& [key, value] : y.labels) {
    if (!is_label_key(key)) bad(kRuleLabel, "labels." + key, "\"" + key + "\" is not a valid label key");
    if (!is_label_value(value)) bad(kRuleLabel, "labels." + key, "\"" + value + "\" is not a valid label value");
  }
  if (y.taints.size() > kMaxTaints) {
    bad(kRuleLabel, "taints", "a node has at most " + std::to_string(kMaxTaints) + " taints, got " +
                                  std::to_string(y.taints.size()));
  }
  for (std::size_t i = 0; i < y.taints.size(); ++i) {
    const std::string field = "taints[" + std::to_string(i) + "]";
    if (!is_label_key(y.taints[i].key)) bad(kRuleLabel, field + ".key", "\"" + y.taints[i].key + "\" is not a valid taint key");
    if (!is_label_value(y.taints[i].value)) {
      bad(kRuleLabel, field + ".value", "\"" + y.taints[i].value + "\" is not a valid taint value");
    }
  }
  if (y.mig) {
    MigLayout mig{y.mig->profile, y.mig->slices_per_gpu, 0};
    int compute = 0;
    const std::int64_t profile_mib = profile_memory_mib(y.mig->profile, &compute);
    if (profile_mib == 0) {
      bad(doc::kRuleInvalidFormat, "mig.profile",
          "\"" + y.mig->profile + "\" is not a MIG profile of the form <compute>g.<memory>gb (1g.10gb)");
    } else if (compute * y.mig->slices_per_gpu > 7) {
      bad(kRuleMigLayout, "mig.slicesPerGpu",
          std::to_string(y.mig->slices_per_gpu) + " slices of " + y.mig->profile + " need " +
              std::to_string(compute * y.mig->slices_per_gpu) + " compute slices; a GPU has 7");
    }
    if (y.mig->slices_per_gpu > limits.max_slices_per_gpu) {
      bad(doc::kRuleOutOfRange, "mig.slicesPerGpu", "must be at most " + std::to_string(limits.max_slices_per_gpu));
    }
    mig.slice_memory_mib = y.mig->slice_memory ? y.mig->slice_memory->value.value() / kMiB : profile_mib;
    if (y.mig->slice_memory && (mig.slice_memory_mib < 1 || mig.slice_memory_mib > kMaxGpuMemoryMib)) {
      bad(doc::kRuleOutOfRange, "mig.sliceMemory", "must be between 1Mi and 4Ti");
    } else if (profile_mib != 0 && mig.slice_memory_mib * y.mig->slices_per_gpu > memory_mib) {
      bad(kRuleMigLayout, "mig.slicesPerGpu",
          std::to_string(y.mig->slices_per_gpu) + " slices of " + std::to_string(mig.slice_memory_mib) +
              " MiB exceed the GPU's " + std::to_string(memory_mib) + " MiB");
    }
    n.mig = mig;
  }
  // Derived labels, as GPU feature discovery and the MIG manager set them.
  const auto derive = [&](std::string_view key, const std::string& value) {
    const auto it = n.labels.find(std::string(key));
    if (it == n.labels.end()) {
      n.labels.emplace(key, value);
    } else if (it->second != value) {
      bad(kRuleLabelConflict, "labels." + std::string(key),
          "is \"" + it->second + "\" but the node's GPUs make it \"" + value + "\"");
    }
  };
  if (!n.product.empty()) derive(kProductLabel, n.product);
  if (n.mig) derive(kMigConfigLabel, "all-" + n.mig->profile);
  return n;
}

std::string padded(int index, int width) {
  std::string s = std::to_string(index);
  if (static_cast<int>(s.size()) < width) s.insert(0, static_cast<std::size_t>(width) - s.size(), '0');
  return s;
}

}  // namespace

std::string_view NodeSpec::pool() const {
  const auto it = labels.find(std::string(kPoolLabel));
  return it == labels.end() ? std::string_view() : std::string_view(it->second);
}

std::int64_t Inventory::gpu_count() const {
  std::int64_t n = 0;
  for (const auto& node : nodes) n += node.gpus;
  return n;
}

std::int64_t Inventory::unit_count() const {
  std::int64_t n = 0;
  for (const auto& node : nodes) n += node.units();
  return n;
}

std::optional<Inventory> parse_inventory(std::string_view text, const std::string& file, Diagnostics& diagnostics,
                                         const InventoryLimits& limits) {
  std::vector<doc::Document> docs;
  const std::size_t before = diagnostics.size();
  doc::ReadLimits read_limits;
  read_limits.max_bytes = limits.max_bytes;
  doc::read_yaml(text, file, docs, diagnostics, read_limits);
  if (has_errors(Diagnostics(diagnostics.begin() + static_cast<std::ptrdiff_t>(before), diagnostics.end()))) {
    return std::nullopt;
  }
  if (docs.size() != 1) {
    report(diagnostics, file, doc::kRuleRequired, "",
           docs.empty() ? "the file holds no inventory"
                        : "expected one inventory, found " + std::to_string(docs.size()) + " YAML documents");
    return std::nullopt;
  }
  const doc::Node& root = docs.front().root;
  // Bound the expansion before decoding: counts are checked per group by the schema, the
  // number of entries here.
  for (const char* list : {"nodeGroups", "nodes"}) {
    const doc::Node* n = root.find(list);
    if (n != nullptr && n->type == doc::NodeType::Sequence && n->items.size() > limits.max_nodes) {
      report(diagnostics, file, kRuleTooManyNodes, list,
             "the inventory lists " + std::to_string(n->items.size()) + " entries; the limit is " +
                 std::to_string(limits.max_nodes) + " nodes",
             n->pos);
      return std::nullopt;
    }
  }
  InventoryYaml yaml;
  doc::SourceMap map;
  doc::DecodeContext ctx(file, "Inventory", "", diagnostics, &map);
  const bool decoded = doc::decode_value(doc::Field{ctx, root, ""}, yaml);
  if (!decoded || ctx.error_count() > 0) return std::nullopt;
  if (yaml.kind != "Inventory") {
    ctx.report(kRuleInventoryKind, map.find("kind"), "kind", "must be \"Inventory\", got \"" + yaml.kind + "\"");
    return std::nullopt;
  }

  // Totals first: a hostile file must not make us build 10,000 x 10,000 names.
  std::int64_t total_nodes = static_cast<std::int64_t>(yaml.nodes.size());
  std::int64_t total_units = 0;
  for (const auto& g : yaml.node_groups) {
    total_nodes += g.count;
    const int slices = g.mig ? g.mig->slices_per_gpu : 1;
    total_units += static_cast<std::int64_t>(g.count) * g.gpus_per_node * slices;
  }
  for (const auto& n : yaml.nodes) total_units += static_cast<std::int64_t>(n.gpus_per_node) * (n.mig ? n.mig->slices_per_gpu : 1);
  if (total_nodes > static_cast<std::int64_t>(limits.max_nodes)) {
    ctx.report(kRuleTooManyNodes, root.pos, "",
               "the inventory has " + std::to_string(total_nodes) + " nodes; the limit is " + std::to_string(limits.max_nodes));
    return std::nullopt;
  }
  if (total_units > limits.max_units) {
    ctx.report(kRuleTooManyGpus, root.pos, "",
               "the inventory has " + std::to_string(total_units) + " GPUs (MIG slices counting one each); the limit is " +
                   std::to_string(limits.max_units));
    return std::nullopt;
  }

  Inventory inventory;
  inventory.nodes.reserve(static_cast<std::size_t>(total_nodes));
  std::map<std::string, std::string> declared;  // node name -> path of its declaration
  const auto add = [&](NodeSpec spec, const std::string& name, const std::string& path, const std::string& field) {
    if (!is_subdomain(name)) {
      ctx.report(doc::kRuleInvalidFormat, map.find(path + "." + field), path + "." + field,
                 "node name \"" + name + "\" is not a DNS subdomain (lower-case letters, digits, '-', '.'; at most 253)");
      return false;
    }
    const auto [it, inserted] = declared.emplace(name, path);
    if (!inserted) {
      ctx.report(kRuleDuplicateNode, map.find(path + "." + field), path + "." + field,
                 "node \"" + name + "\" is already declared by " + it->second);
      return false;
    }
    spec.name = name;
    inventory.nodes.push_back(std::move(spec));
    return true;
  };
  for (std::size_t i = 0; i < yaml.node_groups.size(); ++i) {
    const auto& g = yaml.node_groups[i];
    const std::string path = "nodeGroups[" + std::to_string(i) + "]";
    const std::size_t errors = ctx.error_count();
    const NodeSpec spec = check_node(g, path, ctx, map, limits);
    if (ctx.error_count() != errors) continue;
    const int width = std::max(2, digits(g.count - 1));
    for (int k = 0; k < g.count; ++k) {
      if (!add(spec, g.name_prefix + "-" + padded(k, width), path, "namePrefix")) break;
    }
  }
  for (std::size_t i = 0; i < yaml.nodes.size(); ++i) {
    const auto& n = yaml.nodes[i];
    const std::string path = "nodes[" + std::to_string(i) + "]";
    const std::size_t errors = ctx.error_count();
    NodeSpec spec = check_node(n, path, ctx, map, limits);
    if (ctx.error_count() != errors) continue;
    add(std::move(spec), n.name, path, "name");
  }
  if (ctx.error_count() > 0) return std::nullopt;
  return inventory;
}

std::optional<Inventory> load_inventory(const std::string& path, Diagnostics& diagnostics, const InventoryLimits& limits) {
  auto text = doc::read_file(path, limits.max_bytes);
  if (!text) {
    const bool too_large = text.error().find("above the limit") != std::string::npos;
    report(diagnostics, path, too_large ? doc::kRuleTooLarge : doc::kRuleUnreadable, "", text.error());
    return std::nullopt;
  }
  return parse_inventory(*text, path, diagnostics, limits);
}

// ---- Alibaba node list ------------------------------------------------------------------

std::string alibaba_pool_for_model(std::string_view model) {
  std::string pool = "alibaba-";
  for (char c : model) {
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    pool += is_alnum_lower(lower) || lower == '-' ? lower : '-';
  }
  return pool;
}

std::optional<AlibabaModel> alibaba_model(std::string_view model) {
  static constexpr AlibabaModel kModels[] = {
      {"P100", "Tesla-P100-PCIE-16GB", 16 * 1024},
      {"T4", "Tesla-T4", 16 * 1024},
      {"V100M16", "Tesla-V100-SXM2-16GB", 16 * 1024},
      {"V100M32", "Tesla-V100-SXM2-32GB", 32 * 1024},
      {"A10", "NVIDIA-A10", 24 * 1024},
      {"G2", "G2", 32 * 1024},  // anonymised in the trace; assumed
      {"G3", "G3", 32 * 1024},  // anonymised in the trace; assumed
  };
  for (const auto& m : kModels) {
    if (m.model == model) return m;
  }
  return std::nullopt;
}

namespace {

// A non-negative decimal integer of at most 18 digits (no sign, no spaces).
std::optional<std::int64_t> parse_count(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::int64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.front() == '-' || s.front() == '+') return std::nullopt;
  return v;
}

}  // namespace

std::optional<Inventory> alibaba_inventory(std::string_view text, const std::string& file, Diagnostics& diagnostics,
                                           const InventoryLimits& limits) {
  if (text.size() > limits.max_bytes) {
    report(diagnostics, file, doc::kRuleTooLarge, "",
           "the node list has " + std::to_string(text.size()) + " bytes; the limit is " + std::to_string(limits.max_bytes));
    return std::nullopt;
  }
  static constexpr std::string_view kHeader = "sn,cpu_milli,memory_mib,gpu,model";
  static constexpr std::string_view kColumns[] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
  Inventory inventory;
  std::set<std::string, std::less<>> names;
  std::set<std::string, std::less<>> unknown_models;
  std::int64_t units = 0;
  std::size_t errors = 0;
  const auto error = [&](std::string_view rule, int line, const std::string& column, std::string message) {
    report(diagnostics, file, rule, column, std::move(message), SourcePos{line, 0});
    ++errors;
  };
  int line_no = 0;
  bool header_seen = false;
  std::size_t pos = 0;
  while (pos < text.size() && errors < 100) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!header_seen) {
      header_seen = true;
      if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);  // a byte order mark
      if (line != kHeader) {
        error(kRuleCsvHeader, line_no, "", "the header must be \"" + std::string(kHeader) + "\"");
        return std::nullopt;
      }
      continue;
    }
    if (line.empty()) continue;
    std::string_view fields[5];
    std::size_t count = 0;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = line.find(',', start);
      if (count < 5) fields[count] = line.substr(start, comma == std::string_view::npos ? line.size() - start : comma - start);
      ++count;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (count != 5) {
      error(kRuleCsvColumns, line_no, "", "expected 5 columns (" + std::string(kHeader) + "), got " + std::to_string(count));
      continue;
    }
    if (inventory.nodes.size() >= limits.max_nodes) {
      error(kRuleTooManyNodes, line_no, "", "more than " + std::to_string(limits.max_nodes) + " nodes");
      return std::nullopt;
    }
    NodeSpec node;
    bool ok = true;
    const std::string name(fields[0]);
    if (!is_subdomain(name)) {
      error(doc::kRuleInvalidFormat, line_no, "sn", "\"" + doc::to_utf8(name.substr(0, 64)) + "\" is not a node name");
      ok = false;
    }
    std::int64_t numbers[3] = {0, 0, 0};
    const std::int64_t maxima[3] = {kMaxCpuMilli, kMaxNodeMemoryMib, limits.max_gpus_per_node};
    for (int i = 0; i < 3; ++i) {
      const auto v = parse_count(fields[i + 1]);
      const std::string column(kColumns[i + 1]);
      if (!v) {
        error(kRuleCsvNumber, line_no, column,
              "\"" + doc::to_utf8(std::string(fields[i + 1].substr(0, 32))) + "\" is not a non-negative integer");
        ok = false;
      } else if (*v > maxima[i]) {
        error(kRuleCsvNumber, line_no, column,
              "must be at most " + std::to_string(maxima[i]) + ", got " + std::to_string(*v));
        ok = false;
      } else {
        numbers[i] = *v;
      }
    }
    const std::string model(fields[4]);
    if (!(model.empty() && numbers[2] == 0) && !is_token(model, 63)) {  // CPU-only rows have no model
      error(doc::kRuleInvalidFormat, line_no, "model", "\"" + doc::to_utf8(model.substr(0, 64)) + "\" is not a model name");
      ok = false;
    }
    if (!ok) continue;
    if (!names.insert(name).second) {
      error(kRuleDuplicateNode, line_no, "sn", "node \"" + name + "\" is listed more than once");
      continue;
    }
    if (numbers[2] == 0) continue;  // a CPU-only node: nothing for the GPU model
    node.name = name;
    node.cpu_milli = numbers[0];
    node.memory_mib = numbers[1];
    node.gpus = static_cast<int>(numbers[2]);
    node.gpu_model = model;
    if (const auto known = alibaba_model(model)) {
      node.product = std::string(known->product);
      node.gpu_memory_mib = known->memory_mib;
      node.labels.emplace(kProductLabel, node.product);
    } else if (unknown_models.insert(model).second) {
      report(diagnostics, file, kRuleUnknownModel, "model",
             "model \"" + model + "\" is not in the table of GPU memory sizes; its memory is unknown (0)",
             SourcePos{line_no, 0}, Severity::Warning);
    }
    node.labels.emplace(kPoolLabel, alibaba_pool_for_model(model));
    units += node.gpus;
    if (units > limits.max_units) {
      error(kRuleTooManyGpus, line_no, "gpu", "more than " + std::to_string(limits.max_units) + " GPUs in all");
      return std::nullopt;
    }
    inventory.nodes.push_back(std::move(node));
  }
  if (!header_seen) {
    error(kRuleCsvHeader, 1, "", "the node list is empty; the header must be \"" + std::string(kHeader) + "\"");
  }
  if (errors > 0) return std::nullopt;
  return inventory;
}

}  // namespace gpubank::twin::cluster
