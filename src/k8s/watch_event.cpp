#include "k8s/watch_event.hpp"

namespace gpubank::k8s {

std::string_view to_string(EventType type) {
  switch (type) {
    case EventType::Added: return "ADDED";
    case EventType::Modified: return "MODIFIED";
    case EventType::Deleted: return "DELETED";
    case EventType::Bookmark: return "BOOKMARK";
    case EventType::Error: return "ERROR";
  }
  return "?";
}

namespace {

std::optional<EventType> event_type(std::string_view s) {
  if (s == "ADDED") return EventType::Added;
  if (s == "MODIFIED") return EventType::Modified;
  if (s == "DELETED") return EventType::Deleted;
  if (s == "BOOKMARK") return EventType::Bookmark;
  if (s == "ERROR") return EventType::Error;
  return std::nullopt;
}

const Json* string_at(const Json& object, const char* a, const char* b) {
  if (!object.is_object()) return nullptr;
  const auto outer = object.find(a);
  if (outer == object.end() || !outer->is_object()) return nullptr;
  const auto inner = outer->find(b);
  if (inner == outer->end() || !inner->is_string()) return nullptr;
  return &*inner;
}

}  // namespace

std::string object_key(const Json& object) {
  const Json* name = string_at(object, "metadata", "name");
  if (name == nullptr || name->get_ref<const std::string&>().empty()) return "";
  const Json* ns = string_at(object, "metadata", "namespace");
  if (ns == nullptr || ns->get_ref<const std::string&>().empty()) return name->get<std::string>();
  return ns->get<std::string>() + "/" + name->get<std::string>();
}

Expected<WatchEvent> parse_watch_event(std::string_view line) {
  Json doc = Json::parse(line, nullptr, false);
  if (doc.is_discarded()) return Unexpected{"watch event: not valid JSON"};
  if (!doc.is_object()) return Unexpected{"watch event: not a JSON object"};
  const auto type_it = doc.find("type");
  if (type_it == doc.end() || !type_it->is_string()) return Unexpected{"watch event: type: missing or not a string"};
  const auto type = event_type(type_it->get_ref<const std::string&>());
  if (!type) return Unexpected{"watch event: type: unknown type \"" + type_it->get<std::string>().substr(0, 64) + "\""};
  const auto object_it = doc.find("object");
  if (object_it == doc.end() || !object_it->is_object()) {
    return Unexpected{"watch event: object: missing or not an object"};
  }
  WatchEvent event;
  event.type = *type;
  event.object = std::move(*object_it);
  if (event.type == EventType::Error) return event;
  const Json* rv = string_at(event.object, "metadata", "resourceVersion");
  if (rv == nullptr || rv->get_ref<const std::string&>().empty()) {
    return Unexpected{"watch event: object.metadata.resourceVersion: missing or empty in a " +
                      std::string(to_string(event.type)) + " event"};
  }
  event.resource_version = rv->get<std::string>();
  if (event.type == EventType::Bookmark) return event;
  event.key = object_key(event.object);
  if (event.key.empty()) return Unexpected{"watch event: object.metadata.name: missing or empty"};
  return event;
}

Expected<ListPage> parse_list_page(std::string_view body) {
  Json doc = Json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return Unexpected{"list response: not a JSON object"};
  ListPage page;
  const auto items = doc.find("items");
  if (items != doc.end() && !items->is_null()) {  // an empty list may come as "items": null
    if (!items->is_array()) return Unexpected{"list response: items: not a list"};
    page.items.reserve(items->size());
    for (std::size_t i = 0; i < items->size(); ++i) {
      if (!(*items)[i].is_object()) return Unexpected{"list response: items[" + std::to_string(i) + "]: not an object"};
      page.items.push_back(std::move((*items)[i]));
    }
  }
  const Json* rv = string_at(doc, "metadata", "resourceVersion");
  if (rv == nullptr || rv->get_ref<const std::string&>().empty()) {
    return Unexpected{"list response: metadata.resourceVersion: missing or empty"};
  }
  page.resource_version = rv->get<std::string>();
  if (const Json* cont = string_at(doc, "metadata", "continue")) page.continue_token = cont->get<std::string>();
  return page;
}

int error_code(const WatchEvent& event) {
  if (event.type != EventType::Error) return 0;
  const auto code = event.object.find("code");
  if (code == event.object.end() || !code->is_number_integer()) return 0;
  return code->get<int>();
}

void ObjectStore::replace(const std::vector<Json>& items, std::string resource_version) {
  std::map<std::string, Json> next;
  for (const Json& item : items) {
    std::string key = object_key(item);
    if (!key.empty()) next.insert_or_assign(std::move(key), item);
  }
  for (const auto& [key, old] : objects_) {
    if (!next.contains(key)) report(EventType::Deleted, &old, nullptr);
  }
  for (const auto& [key, fresh] : next) {
    const auto old = objects_.find(key);
    if (old == objects_.end()) {
      report(EventType::Added, nullptr, &fresh);
    } else if (old->second != fresh) {
      report(EventType::Modified, &old->second, &fresh);
    }
  }
  objects_ = std::move(next);
  resource_version_ = std::move(resource_version);
}

void ObjectStore::apply(const WatchEvent& event) {
  if (event.type == EventType::Error) return;
  // First, so that a handler sees the resourceVersion of the event it hears.
  resource_version_ = event.resource_version;
  switch (event.type) {
    case EventType::Error: return;
    case EventType::Bookmark: break;
    case EventType::Added:
    case EventType::Modified: {
      const auto old = objects_.find(event.key);
      if (old == objects_.end()) {
        const auto& stored = objects_.emplace(event.key, event.object).first->second;
        report(EventType::Added, nullptr, &stored);
      } else {
        const Json before = std::move(old->second);
        old->second = event.object;
        report(EventType::Modified, &before, &old->second);
      }
      break;
    }
    case EventType::Deleted: {
      const auto old = objects_.find(event.key);
      if (old != objects_.end()) {
        const Json before = std::move(old->second);
        objects_.erase(old);
        report(EventType::Deleted, &before, nullptr);
      }
      break;
    }
  }
  ++events_applied_;
}

}  // namespace gpubank::k8s
