#include "session/source.h"

#include <sstream>

#include "common/errors.h"
#include "data/synthetic.h"

namespace tl {

SourceSpec SourceSpec::parse(const std::string& text) {
  const auto [kind, rest] = splitFamily(text);
  SourceSpec s;
  if (kind == "synthetic") {
    const auto [generator, params] = splitFamily(rest);
    if (generator.empty())
      throw InvalidArgument("source '" + text + "': name a generator, e.g. synthetic:gaussian:n=256,d=64,seed=0");
    s.kind = Kind::Synthetic;
    s.generator = generator;
    s.params = syntheticGenerator(generator).schema.parse(params, "synthetic:" + generator);
    return s;
  }
  if (kind == "files") {
    s.kind = Kind::Files;
    std::stringstream ss(rest);
    std::string item;
    while (std::getline(ss, item, ',')) {
      const auto eq = item.find('=');
      const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
      if (key == "q") s.q = value;
      else if (key == "k") s.k = value;
      else if (key == "v") s.v = value;
      else if (key == "mask") s.mask = value;
      else throw InvalidArgument("source '" + text + "': unknown key '" + key + "' (expected q, k, v, mask)");
    }
    if (s.q.empty() || s.k.empty()) throw InvalidArgument("source '" + text + "': q and k files are required");
    return s;
  }
  if (kind == "model") {
    s.kind = Kind::Model;
    s.model = ModelSourceSpec::parse(rest);
    return s;
  }
  throw InvalidArgument("source '" + text +
                        "' is not valid; expected synthetic:<generator>:key=value,..., files:q=Q.npy,k=K.npy or "
                        "model:checkpoint=DIR,image=fashion-mnist:test:0,layer=0,head=0");
}

std::string SourceSpec::toString() const {
  if (kind == Kind::Synthetic) {
    const std::string params_ = formatParams(params, &syntheticGenerator(generator).schema);
    return "synthetic:" + generator + (params_.empty() ? "" : ":" + params_);
  }
  if (kind == Kind::Model) return "model:" + model.toString();
  std::string out = "files:q=" + q + ",k=" + k;
  if (!v.empty()) out += ",v=" + v;
  if (!mask.empty()) out += ",mask=" + mask;
  return out;
}

bool SourceSpec::isPointCloud() const {
  return kind == Kind::Synthetic && syntheticGenerator(generator).pointCloud;
}

}  // namespace tl
