// Fuzzes list/watch's pure half: the input is a watch stream (newline-delimited lines), fed
// line by line to parse_watch_event and an ObjectStore, and the whole input to
// parse_list_page. Invariants: no crash; an accepted ADDED/MODIFIED/DELETED event has a key
// and a resourceVersion, a BOOKMARK a resourceVersion; after an applied event the store's
// resourceVersion is the event's; ADDED/MODIFIED leave the object in the store, DELETED
// leaves it out; every refusal names the watch event or list response; the handler's
// before/after pointers match the event type.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "k8s/watch_event.hpp"

using namespace gpubank::k8s;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  ObjectStore store([](EventType type, const Json* before, const Json* after) {
    if (type == EventType::Added && (after == nullptr || before != nullptr)) __builtin_trap();
    if (type == EventType::Deleted && (before == nullptr || after != nullptr)) __builtin_trap();
    if (type == EventType::Modified && (before == nullptr || after == nullptr)) __builtin_trap();
  });
  std::size_t start = 0;
  while (start < input.size()) {
    const std::size_t end = std::min(input.find('\n', start), input.size());
    const std::string_view line = input.substr(start, end - start);
    start = end + 1;
    auto event = parse_watch_event(line);
    if (!event.ok()) {
      if (event.error().rfind("watch event: ", 0) != 0) __builtin_trap();
      continue;
    }
    if (event->type != EventType::Error && event->resource_version.empty()) __builtin_trap();
    const bool has_key = !event->key.empty();
    const bool object_event = event->type == EventType::Added || event->type == EventType::Modified ||
                              event->type == EventType::Deleted;
    if (object_event != has_key) __builtin_trap();
    store.apply(*event);
    if (event->type == EventType::Error) continue;
    if (store.resource_version() != event->resource_version) __builtin_trap();
    if (object_event && store.objects().contains(event->key) != (event->type != EventType::Deleted)) __builtin_trap();
  }
  auto page = parse_list_page(input);
  if (!page.ok()) {
    if (page.error().rfind("list response: ", 0) != 0) __builtin_trap();
  } else {
    if (page->resource_version.empty()) __builtin_trap();
    store.replace(page->items, page->resource_version);
    if (store.resource_version() != page->resource_version) __builtin_trap();
  }
  return 0;
}
