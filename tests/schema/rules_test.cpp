// Each keyword and check, on a test CRD that uses all of them: a valid Widget passes, and
// each deliberately broken one fails with the exact path and rule.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fixture.hpp"

namespace gpubank::schema {
namespace {

using testing::found;
using testing::object;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::string_view kWidgetCrd = R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.gpubank.dev}
spec:
  group: example.gpubank.dev
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata:
            type: object
            properties:
              name: {type: string, maxLength: 20}
          spec:
            type: object
            required: [size, mode]
            x-kubernetes-validations:
            - {rule: self.size <= 100, message: size at most 100}
            - {rule: self.mode == oldSelf.mode, message: mode is immutable}
            properties:
              size: {type: integer, minimum: 1, maximum: 64}
              replicas: {type: integer, format: int32}
              ratio: {type: number, minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true}
              step: {type: integer, multipleOf: 4}
              mode: {type: string, enum: [Fast, Slow]}
              name: {type: string, minLength: 2, maxLength: 5, pattern: '^[a-z]+$'}
              title: {type: string, maxLength: 3}
              quantity:
                x-kubernetes-int-or-string: true
                anyOf: [{type: integer}, {type: string}]
                pattern: '^[0-9]+(Gi|Mi)?$'
              labels: {type: object, additionalProperties: {type: string}, minProperties: 1, maxProperties: 2}
              tags: {type: array, items: {type: string}, x-kubernetes-list-type: set, minItems: 1, maxItems: 3}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port, protocol]
                items:
                  type: object
                  required: [port]
                  properties:
                    port: {type: integer}
                    protocol: {type: string, default: TCP}
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
                properties:
                  known: {type: boolean}
              free: {type: object, additionalProperties: true}
              optional: {type: string, nullable: true}
              when: {type: string, format: date-time}
              email: {type: string, format: email}
              template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
              choice:
                type: object
                properties:
                  a: {type: string}
                  b: {type: string}
                oneOf: [{required: [a]}, {required: [b]}]
              notEmpty: {type: string, not: {enum: [""]}}
              both:
                type: object
                properties:
                  x: {type: integer}
                allOf: [{required: [x]}]
              letters: {type: string, pattern: '^\pL+$'}
)";

constexpr std::string_view kValid = R"(
apiVersion: example.gpubank.dev/v1
kind: Widget
metadata:
  name: blue
  namespace: team-a
  generateName: blue-
  labels: {app.kubernetes.io/name: widget, team: a}
  annotations: {example.com/note: "any text at all"}
  finalizers: [example.com/cleanup]
spec:
  size: 8
  replicas: 3
  ratio: 0.5
  step: 12
  mode: Fast
  name: abc
  title: "äöü"
  quantity: 10Gi
  labels: {a: b}
  tags: [x, y]
  ports: [{port: 80}, {port: 80, protocol: UDP}]
  extra: {known: true, anything: {deep: [1, 2]}}
  free: {whatever: 1}
  optional: null
  when: "2026-03-29T02:30:00.123+02:00"
  template:
    apiVersion: v1
    kind: Pod
    metadata: {name: worker, labels: {role: w}}
    spec: {containers: []}
  choice: {a: x}
  notEmpty: "x"
  both: {x: 1}
  letters: abc
)";

class Rules : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { set_ = new SchemaSet(testing::with_crds(kWidgetCrd)); }
  static void TearDownTestSuite() {
    delete set_;
    set_ = nullptr;
  }

  // The valid widget with spec.<field> replaced by the YAML value `yaml` (or removed when
  // `yaml` is empty).
  static Json with_spec(const std::string& field, std::string_view yaml) {
    Json o = object(kValid);
    if (yaml.empty()) {
      o["spec"].erase(field);
    } else {
      o["spec"][field] = object("value: " + std::string(yaml))["value"];
    }
    return o;
  }
  static Result check(const Json& o) { return set_->validate(o); }

  static SchemaSet* set_;
};

SchemaSet* Rules::set_ = nullptr;

TEST_F(Rules, TheValidWidgetPassesAndItsCelRulesAreCountedNotChecked) {
  const Result r = check(object(kValid));
  EXPECT_THAT(found(r), ElementsAre());
  ASSERT_EQ(r.not_checked.size(), 3u);
  EXPECT_EQ(r.cel_rules_not_checked(), 2u);
  // A pattern std::regex cannot run is listed, never passed silently.
  EXPECT_EQ(r.not_checked[0].path, "spec.letters");
  EXPECT_EQ(r.not_checked[0].what, "pattern");
  EXPECT_EQ(r.not_checked[0].reason, "Unicode class \\p has no ECMAScript equivalent");
  EXPECT_EQ(r.not_checked[1].path, "spec");
  EXPECT_EQ(r.not_checked[1].rule, "self.size <= 100");
  EXPECT_EQ(r.not_checked[1].reason, "CEL is not evaluated");
  EXPECT_EQ(r.not_checked[2].reason, "CEL transition rule (runs on updates only); CEL is not evaluated");
  // With no spec there is no value for the spec's rules to apply to.
  Json bare = object(kValid);
  bare.erase("spec");
  EXPECT_EQ(check(bare).cel_rules_not_checked(), 0u);
}

TEST_F(Rules, Type) {
  const Result r = check(with_spec("size", "\"8\""));
  ASSERT_THAT(found(r), ElementsAre("spec.size [type]"));
  EXPECT_EQ(r.violations[0].message, "Invalid value: \"string\": must be of type integer");
  EXPECT_THAT(found(check(with_spec("size", "8.5"))), ElementsAre("spec.size [type]"));
  EXPECT_THAT(found(check(with_spec("size", "8.0"))), ElementsAre());  // an integral number is an integer
  EXPECT_THAT(found(check(with_spec("size", "18446744073709551615"))), ElementsAre("spec.size [type]"));
  EXPECT_THAT(found(check(with_spec("tags", "x"))), ElementsAre("spec.tags [type]"));
  EXPECT_THAT(found(check(with_spec("extra", "[1]"))), ElementsAre("spec.extra [type]"));
}

TEST_F(Rules, RequiredAndNullsOfNonNullableFields) {
  EXPECT_THAT(found(check(with_spec("mode", ""))), ElementsAre("spec.mode [required]"));
  // The API server drops a null it may not keep before validating: a required field is missing.
  EXPECT_THAT(found(check(with_spec("size", "null"))), ElementsAre("spec.size [required]"));
  EXPECT_THAT(found(check(with_spec("name", "null"))), ElementsAre());
  EXPECT_THAT(found(check(with_spec("ports", "[{protocol: TCP}]"))), ElementsAre("spec.ports[0].port [required]"));
}

TEST_F(Rules, Enum) {
  const Result r = check(with_spec("mode", "Medium"));
  ASSERT_THAT(found(r), ElementsAre("spec.mode [enum]"));
  EXPECT_EQ(r.violations[0].message, "Unsupported value: \"Medium\": supported values: \"Fast\", \"Slow\"");
}

TEST_F(Rules, MinimumAndMaximumWithExclusiveBounds) {
  EXPECT_THAT(found(check(with_spec("size", "0"))), ElementsAre("spec.size [minimum]"));
  const Result over = check(with_spec("size", "65"));
  ASSERT_THAT(found(over), ElementsAre("spec.size [maximum]"));
  EXPECT_EQ(over.violations[0].message, "Invalid value: 65: should be less than or equal to 64");
  EXPECT_THAT(found(check(with_spec("size", "64"))), ElementsAre());
  const Result zero = check(with_spec("ratio", "0"));
  ASSERT_THAT(found(zero), ElementsAre("spec.ratio [minimum]"));
  EXPECT_EQ(zero.violations[0].message, "Invalid value: 0: should be greater than 0");
  EXPECT_THAT(found(check(with_spec("ratio", "1"))), ElementsAre("spec.ratio [maximum]"));
  EXPECT_THAT(found(check(with_spec("ratio", "0.999"))), ElementsAre());
}

TEST_F(Rules, MultipleOf) {
  EXPECT_THAT(found(check(with_spec("step", "6"))), ElementsAre("spec.step [multipleOf]"));
  EXPECT_THAT(found(check(with_spec("step", "-8"))), ElementsAre());
}

TEST_F(Rules, FormatInt32AndDateTime) {
  const Result r = check(with_spec("replicas", "2147483648"));
  ASSERT_THAT(found(r), ElementsAre("spec.replicas [format]"));
  EXPECT_EQ(r.violations[0].message, "Invalid value: 2147483648: must be of type integer with format int32");
  EXPECT_THAT(found(check(with_spec("replicas", "-2147483648"))), ElementsAre());
  EXPECT_THAT(found(check(with_spec("when", "2026-02-29T00:00:00Z"))), ElementsAre("spec.when [format]"));  // no leap day
  EXPECT_THAT(found(check(with_spec("when", "2026-01-01T24:00:00Z"))), ElementsAre("spec.when [format]"));
  EXPECT_THAT(found(check(with_spec("when", "2026-01-01 10:00:00Z"))), ElementsAre("spec.when [format]"));
  EXPECT_THAT(found(check(with_spec("when", "2028-02-29t23:59:59z"))), ElementsAre());
  // A format the API server checks and gpubank does not is listed as not checked.
  const Result email = check(with_spec("email", "ops@example.com"));
  EXPECT_THAT(found(email), ElementsAre());
  const auto it = std::find_if(email.not_checked.begin(), email.not_checked.end(),
                               [](const NotChecked& n) { return n.what == "format"; });
  ASSERT_NE(it, email.not_checked.end());
  EXPECT_EQ(it->rule, "email");
  EXPECT_EQ(it->path, "spec.email");
}

TEST_F(Rules, LengthsCountCodePointsAndPatternsSearch) {
  EXPECT_THAT(found(check(with_spec("name", "a"))), ElementsAre("spec.name [minLength]"));
  const Result long_name = check(with_spec("name", "abcdef"));
  ASSERT_THAT(found(long_name), ElementsAre("spec.name [maxLength]"));  // the first failure ends the string's checks
  EXPECT_EQ(long_name.violations[0].message, "Too long: may not be more than 5 characters (6)");
  const Result pattern = check(with_spec("name", "Ab1"));
  ASSERT_THAT(found(pattern), ElementsAre("spec.name [pattern]"));
  EXPECT_EQ(pattern.violations[0].message, "Invalid value: \"Ab1\": should match '^[a-z]+$'");
  // Three code points in six bytes fit maxLength: 3; four do not.
  EXPECT_THAT(found(check(with_spec("title", "\"ßüé\""))), ElementsAre());
  EXPECT_THAT(found(check(with_spec("title", "\"ßüéa\""))), ElementsAre("spec.title [maxLength]"));
}

TEST_F(Rules, IntOrString) {
  EXPECT_THAT(found(check(with_spec("quantity", "10"))), ElementsAre());
  EXPECT_THAT(found(check(with_spec("quantity", "512Mi"))), ElementsAre());
  EXPECT_THAT(found(check(with_spec("quantity", "10Ki"))), ElementsAre("spec.quantity [pattern]"));
  const Result r = check(with_spec("quantity", "true"));
  ASSERT_THAT(found(r), ElementsAre("spec.quantity [type]"));
  EXPECT_EQ(r.violations[0].message, "Invalid value: \"boolean\": must be of type integer or string");
  EXPECT_THAT(found(check(with_spec("quantity", "1.5"))), ElementsAre("spec.quantity [type]"));
}

TEST_F(Rules, AdditionalPropertiesAndPropertyCounts) {
  EXPECT_THAT(found(check(with_spec("labels", "{a: 1}"))), ElementsAre("spec.labels[a] [type]"));
  EXPECT_THAT(found(check(with_spec("labels", "{}"))), ElementsAre("spec.labels [minProperties]"));
  const Result r = check(with_spec("labels", "{a: x, b: y, c: z}"));
  ASSERT_THAT(found(r), ElementsAre("spec.labels [maxProperties]"));
  EXPECT_EQ(r.violations[0].message, "Too many: 3: must have at most 2 properties");
  EXPECT_THAT(found(check(with_spec("free", "{any: [thing]}"))), ElementsAre());
}

TEST_F(Rules, ItemsAndListTypeSet) {
  EXPECT_THAT(found(check(with_spec("tags", "[x, 1]"))), ElementsAre("spec.tags[1] [type]"));
  const Result dup = check(with_spec("tags", "[a, b, a]"));
  ASSERT_THAT(found(dup), ElementsAre("spec.tags[2] [x-kubernetes-list-type]"));
  EXPECT_EQ(dup.violations[0].message, "Duplicate value: \"a\"");
  EXPECT_THAT(found(check(with_spec("tags", "[]"))), ElementsAre("spec.tags [minItems]"));
  const Result many = check(with_spec("tags", "[a, b, c, d]"));
  ASSERT_THAT(found(many), ElementsAre("spec.tags [maxItems]"));
  EXPECT_EQ(many.violations[0].message, "Too many: 4: must have at most 3 items");
}

TEST_F(Rules, ListTypeMapKeysCompareWithTheirDefaults) {
  // protocol defaults to TCP, so these two items have the same key.
  const Result r = check(with_spec("ports", "[{port: 80}, {port: 443}, {port: 80, protocol: TCP}]"));
  ASSERT_THAT(found(r), ElementsAre("spec.ports[2] [x-kubernetes-list-type]"));
  EXPECT_EQ(r.violations[0].message, "Duplicate value: {\"port\":80,\"protocol\":\"TCP\"}");
  EXPECT_THAT(found(check(with_spec("ports", "[{port: 80}, 7]"))),
              ElementsAre("spec.ports[1] [type]", "spec.ports[1] [x-kubernetes-list-type]"));
}

TEST_F(Rules, UnknownFieldsExceptWherePreservedOrAllowed) {
  Json o = object(kValid);
  o["spec"]["colour"] = "blue";
  o["spec"]["extra"]["more"] = 1;                 // preserve-unknown-fields
  o["spec"]["free"]["more"] = 1;                  // additionalProperties: true
  o["spec"]["template"]["spec"]["more"] = 1;       // preserved inside the embedded object
  o["status"] = Json::object();
  const Result r = check(o);
  ASSERT_THAT(found(r), ElementsAre("spec.colour [unknown-field]", "status [unknown-field]"));
  EXPECT_EQ(r.violations[0].message, "unknown field \"spec.colour\"");
  // Declared fields of a preserving object are still validated.
  EXPECT_THAT(found(check(with_spec("extra", "{known: maybe}"))), ElementsAre("spec.extra.known [type]"));
}

TEST_F(Rules, Nullable) {
  EXPECT_THAT(found(check(with_spec("optional", "x"))), ElementsAre());
  EXPECT_THAT(found(check(with_spec("tags", "[a, null]"))), ElementsAre("spec.tags[1] [type]"));
}

TEST_F(Rules, EmbeddedResources) {
  const Result r = check(with_spec("template", "{metadata: {name: a/b, labels: {\"bad key!\": x}, colour: red}}"));
  EXPECT_THAT(found(r), ElementsAre("spec.template.apiVersion [required]", "spec.template.kind [required]",
                                    "spec.template.metadata.colour [unknown-field]", "spec.template.metadata.name [name]",
                                    "spec.template.metadata.labels[bad key!] [label-key]"));
  EXPECT_THAT(found(check(with_spec("template", "{apiVersion: a/b/c, kind: \"no kind\"}"))),
              ElementsAre("spec.template.apiVersion [embedded-resource]", "spec.template.kind [embedded-resource]"));
}

TEST_F(Rules, OneOfAnyOfAllOfNot) {
  const Result two = check(with_spec("choice", "{a: x, b: y}"));
  ASSERT_THAT(found(two), ElementsAre("spec.choice [oneOf]"));
  EXPECT_THAT(two.violations[0].message, HasSubstr("must validate one and only one schema (oneOf); found 2 valid"));
  EXPECT_THAT(found(check(with_spec("choice", "{}"))), ElementsAre("spec.choice [oneOf]", "spec.choice.a [required]"));
  EXPECT_THAT(found(check(with_spec("notEmpty", "\"\""))), ElementsAre("spec.notEmpty [not]"));
  EXPECT_THAT(found(check(with_spec("both", "{}"))), ElementsAre("spec.both.x [required]"));
}

TEST_F(Rules, AnyOfReportsTheClosestBranch) {
  const SchemaSet set = testing::with_crds(R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.gpubank.dev}
spec:
  group: example.gpubank.dev
  scope: Cluster
  names: {kind: Gadget, plural: gadgets}
  versions:
  - name: v1
    served: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              target: {type: string}
              min: {type: integer}
            anyOf:
            - {required: [target]}
            - {properties: {min: {minimum: 1}}, required: [min]}
)");
  const Json ok = object("{apiVersion: example.gpubank.dev/v1, kind: Gadget, metadata: {name: g}, spec: {min: 2}}");
  EXPECT_THAT(found(set.validate(ok)), ElementsAre());
  const Json bad = object("{apiVersion: example.gpubank.dev/v1, kind: Gadget, metadata: {name: g}, spec: {min: 0}}");
  EXPECT_THAT(found(set.validate(bad)), ElementsAre("spec [anyOf]", "spec.target [required]"));
}

TEST_F(Rules, MetadataIsObjectMeta) {
  Json o = object(kValid);
  o["metadata"]["name"] = "Blue_Widget";
  o["metadata"]["namespace"] = "Team-A";
  o["metadata"]["labels"]["tier"] = std::string(64, 'x');
  o["metadata"]["labels"]["example.com/"] = "x";
  o["metadata"]["annotations"]["Example.COM/Note"] = "case does not matter";
  o["metadata"]["annotations"]["a/b/c"] = "x";
  o["metadata"]["finalizers"].push_back("bad finalizer");
  o["metadata"]["colour"] = "red";
  o["metadata"]["generation"] = "1";
  const Result r = check(o);
  ASSERT_THAT(found(r), ElementsAre("metadata.colour [unknown-field]", "metadata.generation [type]",
                                    "metadata.name [name]", "metadata.namespace [namespace]",
                                    "metadata.labels[tier] [label-value]", "metadata.labels[example.com/] [label-key]",
                                    "metadata.annotations[a/b/c] [annotation-key]", "metadata.finalizers[1] [finalizer]"));
  EXPECT_THAT(r.violations[2].message, HasSubstr("Invalid value: \"Blue_Widget\": must be a lowercase RFC 1123 subdomain"));
  // The CRD's own metadata schema limits the name to 20 characters.
  Json long_name = object(kValid);
  long_name["metadata"]["name"] = std::string(21, 'a');
  EXPECT_THAT(found(check(long_name)), ElementsAre("metadata.name [maxLength]"));
  Json nameless = object(kValid);
  nameless["metadata"].erase("name");
  nameless["metadata"].erase("generateName");
  EXPECT_THAT(found(check(nameless)), ElementsAre("metadata.name [required]"));
  Json big = object(kValid);
  big["metadata"]["annotations"]["example.com/big"] = std::string(256 * 1024, 'x');
  EXPECT_THAT(found(check(big)), ElementsAre("metadata.annotations [annotations-size]"));
  Json unknown_root = object(kValid);
  unknown_root["colour"] = "red";
  EXPECT_THAT(found(check(unknown_root)), ElementsAre("colour [unknown-field]"));
}

TEST_F(Rules, HostileInputIsRefusedWithOneViolation) {
  Json deep = Json::array();
  for (int i = 0; i < 200; ++i) deep = Json::array({std::move(deep)});
  Json nested = object(kValid);
  nested["spec"]["extra"]["nested"] = std::move(deep);
  EXPECT_THAT(found(check(nested)), ElementsAre(" [too-deep]"));
  Json huge = object(kValid);
  huge["spec"]["extra"]["blob"] = std::string(std::size_t{4} << 20, 'x');
  const Result too_large = check(huge);
  ASSERT_THAT(found(too_large), ElementsAre(" [too-large]"));
  EXPECT_EQ(too_large.violations[0].message, "Too large: the object is more than 3145728 bytes as JSON");
}

}  // namespace
}  // namespace gpubank::schema
