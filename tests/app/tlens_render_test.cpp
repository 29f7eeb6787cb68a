// End-to-end: `tlens render SESSION.json --out DIR`. With the GUI library (TL_GUI) it writes the figures
// of the session's 2-D views in every format; without it the command says so and exits 1.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "ops/registry.h"
#include "session/session.h"
#include "support/figure_file.h"

namespace tl::testing {
namespace {

const ExportSettings kSettings{{"png", "svg", "pdf"}, 400, 300, 1.0};

std::string smallSession(const std::string& dir) {
  Session s;
  s.source = SourceSpec::parse("synthetic:gaussian:n=12,d=4,seed=2");
  s.operators = {OperatorRegistry::builtin().parse("sinkhorn:T=4,eps=0.5")};
  s.views = {"plan", "convergence"};
  s.exportSettings = kSettings;
  const std::string path = dir + "/session.json";
  s.save(path);
  return path;
}

#ifdef TL_TEST_GUI
TEST(TlensRender, WritesEveryViewInEveryFormat) {
  const std::string dir = scratchDir("render");
  const CliRun run = runTlens({"render", smallSession(dir), "--out", dir + "/figures"});
  ASSERT_EQ(run.status, 0) << run.err;
  for (const std::string view : {"plan", "convergence"}) {
    for (const std::string& format : kSettings.formats) {
      const std::string file = dir + "/figures/" + view + "." + format;
      ASSERT_TRUE(fileExists(file)) << file << "\n" << run.out;
      EXPECT_TRUE(test::isFigure(readText(file), format, kSettings)) << file;
      EXPECT_NE(run.out.find(file), std::string::npos) << "not reported: " << file;
    }
  }
}

// The bundled certificates session: the Certificates view as figures and its tables as CSV.
TEST(TlensRender, CertificatesSessionWritesFiguresAndTables) {
  const std::string dir = scratchDir("render-certificates");
  const CliRun run = runTlens({"render", std::string(TL_SOURCE_DIR) + "/resources/certificates_session.json", "--out", dir});
  ASSERT_EQ(run.status, 0) << run.err;
  const Session s = Session::load(std::string(TL_SOURCE_DIR) + "/resources/certificates_session.json");
  for (const std::string format : {"png", "svg", "pdf"})
    EXPECT_TRUE(test::isFigure(readText(dir + "/certificates." + format), format, s.exportSettings)) << format;
  const std::string csv = readText(dir + "/certificates.csv");
  for (const char* section : {"# blocks", "# summary (Table 7)", "# observed contraction", "# bias certificate"})
    EXPECT_NE(csv.find(section), std::string::npos) << section;
  EXPECT_NE(csv.find("tile,0,32,0,32,1,"), std::string::npos);  // the first diagonal tile is interior
  EXPECT_NE(csv.find("tile,0,32,32,64,0,,"), std::string::npos);  // its neighbour straddles the band edge: n/a
}

TEST(TlensRender, MissingSessionFileIsFailure) {
  const CliRun run = runTlens({"render", scratchDir("render-missing") + "/absent.json", "--out", "x"});
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_EQ(run.err.rfind("tlens: error: ", 0), 0u) << run.err;
}
#else
TEST(TlensRender, WithoutGuiSaysSoAndFails) {
  const std::string dir = scratchDir("render-nogui");
  const CliRun run = runTlens({"render", smallSession(dir), "--out", dir + "/figures"});
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("without the GUI"), std::string::npos) << run.err;
  EXPECT_EQ(lineCount(run.err), 1) << run.err;
}
#endif

}  // namespace
}  // namespace tl::testing
