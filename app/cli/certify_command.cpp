// `tlens certify`: the certificates of banded Sinkhorn for one input (docs/cli.md#certify): projective
// contraction per interior tile, positive strip and core rectangle, the Table-7 summary, the observed
// contraction of the iterates, the memory ledger and, with V and G, the bias certificate. Writes one JSON file.
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "banded_options.h"
#include "commands.h"
#include "common/errors.h"
#include "io/atomic_file.h"
#include "ops/banded/banded_certificates.h"

namespace tl::cli {
namespace {

CommandLine certifyCommandLine() {
  std::vector<OptionSpec> options = bandedInputOptions(false);
  options.insert(options.end(),
                 {{"op", "SPEC", "banded operator, e.g. \"banded:W=16,base_steps=15,tail_steps=2,eps=1\""},
                  {"loss-weights", "G.npy", "G, n_q x d_v, with --v: adds the bias certificate for L = sum(G * output)"},
                  {"tile", "B", "block size of the tile grid and strips (default: the operator's tile)"},
                  {"tau", "TOL", "tolerance of the certified depth: first R with max|c_R| <= TOL (default 1e-5)"},
                  {"tails", "R,R,..", "tail depths of the bias certificate (default 0,1,2,4)"},
                  {"json", "F", "write the certificates to this JSON file"}});
  return CommandLine("certify", "Contraction and bias certificates of banded Sinkhorn attention (float64).",
                     std::move(options));
}

std::vector<int> tailsFrom(const CommandLine& cl) {
  std::vector<int> tails;
  std::stringstream list(cl.get("tails").value_or("0,1,2,4"));
  for (std::string item; std::getline(list, item, ',');) {
    size_t used = 0;
    int R = -1;
    try {
      R = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || R < 0)
      throw InvalidArgument("--tails must list tail depths >= 0 separated by commas (got '" + item + "')");
    tails.push_back(R);
  }
  if (tails.empty()) throw InvalidArgument("--tails is empty");
  return tails;
}

nlohmann::json blockJson(const CertificateBlock& b, double eps) {
  const Contraction c = b.at(eps);
  nlohmann::json j = {{"row0", b.row0}, {"row1", b.row1}, {"col0", b.col0}, {"col1", b.col1},
                      {"delta", c.delta}, {"rho_h", c.rhoH}, {"one_minus_rho_h", c.oneMinusRhoH},
                      {"rho_range", c.rhoRange}, {"one_minus_rho_range", c.oneMinusRhoRange}};
  j["predicted_steps"] = c.predictedSteps ? nlohmann::json(*c.predictedSteps) : nlohmann::json(nullptr);
  return j;
}

// The positive blocks as JSON, and how many were n/a (not strictly positive).
nlohmann::json blocksJson(const std::vector<CertificateBlock>& blocks, double eps, size_t& na) {
  nlohmann::json out = nlohmann::json::array();
  na = 0;
  for (const CertificateBlock& b : blocks) {
    if (b.positive) out.push_back(blockJson(b, eps));
    else ++na;
  }
  return out;
}

}  // namespace

int certifyCommand(const Args& args) {
  CommandLine cl = certifyCommandLine();
  cl.parse(args);
  if (cl.helpRequested()) {
    std::cout << cl.usage() << "\n" << sourcesHelp();
    return 0;
  }
  const BandedParams params = bandedParamsFrom(cl);
  const int tile = cl.has("tile") ? parsePositiveInt("tile", cl.required("tile")) : params.tile;
  const double tau = cl.has("tau") ? parseReal("tau", cl.required("tau")) : 1e-5;
  if (!(tau > 0)) throw InvalidArgument("--tau must be > 0 (got '" + cl.required("tau") + "')");
  const std::vector<int> tails = tailsFrom(cl);
  const std::string jsonPath = cl.required("json");
  if (cl.has("loss-weights") && !cl.has("v") && !cl.has("source"))
    throw InvalidArgument("--loss-weights needs --v (the loss is sum(G * output), output = A V)");
  const AttentionInput<double> input = bandedInputFrom(cl);

  const ContractionCertificates certs = contractionCertificates(input, params, tile);
  const double eps = params.eps;
  nlohmann::json out = {{"operator", cl.required("op")}, {"eps", eps},       {"n_q", input.nQueries()},
                        {"n_k", input.nKeys()},          {"tile", tile},     {"dustbin", params.dustbin},
                        {"index_space", input.mask ? "valid tokens" : "tokens"}};
  size_t naTiles = 0, naStrips = 0;
  out["tiles"] = blocksJson(certs.tiles, eps, naTiles);
  out["na_tiles"] = naTiles;
  out["strips"] = blocksJson(certs.strips, eps, naStrips);
  out["na_strips"] = naStrips;
  size_t naCores = 0;
  out["cores"] = blocksJson(certs.cores, eps, naCores);
  out["whole"] = certs.whole ? blockJson(*certs.whole, eps) : nlohmann::json(nullptr);
  const ContractionSummary s = summarizeContraction(certs, eps);
  out["summary"] = {{"granularity", s.granularity},   {"blocks", s.blocks},       {"median_rho_h", s.medianRhoH},
                    {"p95_rho_h", s.p95RhoH},         {"max_rho_h", s.maxRhoH},   {"median_rho_range", s.medianRhoRange},
                    {"max_rho_range", s.maxRhoRange}};
  nlohmann::json observed = nlohmann::json::array();
  for (const auto& r : observedContraction(input, params)) observed.push_back(r ? nlohmann::json(*r) : nlohmann::json(nullptr));
  out["observed"] = observed;

  LedgerShape shape;
  shape.L = input.nQueries();
  shape.W = params.W;
  shape.tile = tile;
  shape.d = input.headDim();
  shape.baseSteps = params.baseSteps;
  shape.tailSteps = params.tailSteps;
  nlohmann::json ledger = nlohmann::json::array();
  for (const LedgerRow& row : memoryLedger(shape))
    ledger.push_back({{"quantity", row.quantity}, {"formula", row.formula}, {"unit", row.bytes ? "MiB" : "entries"},
                      {"direct", row.bytes ? row.direct / (1024.0 * 1024.0) : row.direct},
                      {"one_reference", row.bytes ? row.oneReference / (1024.0 * 1024.0) : row.oneReference}});
  out["ledger"] = ledger;

  std::string biasLine = "no bias certificate (give --v and --loss-weights)";
  if (cl.has("loss-weights")) {
    if (!input.V) throw InvalidArgument("--loss-weights needs values (--v or a source that has them)");
    const BiasCertificate bias = biasCertificate(input, params, lossWeightsFrom(cl), tails, tau);
    nlohmann::json rows = nlohmann::json::array();
    for (const BiasRow& r : bias.rows)
      rows.push_back({{"R", r.R}, {"eta_norm2", r.etaNorm2}, {"c_inf", r.cInf}, {"grad_inf", r.gradInf},
                      {"gap_inf", r.gapInf}, {"residual", r.residual}});
    out["bias"] = {{"tau", tau}, {"rows", rows}, {"status", bias.selectedR ? "certified" : "uncertified"}};
    out["selected_R"] = bias.selectedR ? nlohmann::json(*bias.selectedR) : nlohmann::json(nullptr);
    biasLine = bias.selectedR ? "certified tail depth R* = " + std::to_string(*bias.selectedR)
                              : "no listed tail depth is certified at tau";
  }
  writeFileAtomically(jsonPath, out.dump(2) + "\n");
  std::cout << "banded certificates on " << input.nQueries() << "x" << input.nKeys() << " (tile " << tile << "): "
            << s.blocks << " positive " << s.granularity << ", median rho_H " << s.medianRhoH << ", max rho_H "
            << s.maxRhoH << "; " << naTiles << " tiles n/a (not strictly positive); " << biasLine << "; wrote "
            << jsonPath << "\n";
  return 0;
}

}  // namespace tl::cli
