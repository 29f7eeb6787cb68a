// Fashion-MNIST: small generated splits through TL_FASHION_MNIST_DIR, and the real test split when installed.
#include "data/fashion_mnist.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "support/idx_files.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::idxBytes;
using test::throwsWith;
using test::writeGz;

// Sets TL_FASHION_MNIST_DIR for one test and restores what was there.
class ScopedDatasetDir {
 public:
  explicit ScopedDatasetDir(const std::string& dir) {
    if (const char* old = std::getenv("TL_FASHION_MNIST_DIR")) {
      old_ = old;
      hadOld_ = true;
    }
    ::setenv("TL_FASHION_MNIST_DIR", dir.c_str(), 1);
  }
  ~ScopedDatasetDir() {
    if (hadOld_)
      ::setenv("TL_FASHION_MNIST_DIR", old_.c_str(), 1);
    else
      ::unsetenv("TL_FASHION_MNIST_DIR");
  }

 private:
  std::string old_;
  bool hadOld_ = false;
};

class FashionMnist : public ::testing::Test {
 protected:
  void writeSplit(const std::string& prefix, uint32_t count, const std::string& labels, uint32_t rows = 28) {
    std::string pixels(count * rows * 28, '\0');
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = char(i % 256);
    writeGz(dir.file(prefix + "-images-idx3-ubyte.gz"), idxBytes({count, rows, 28}, pixels));
    writeGz(dir.file(prefix + "-labels-idx1-ubyte.gz"), idxBytes({uint32_t(labels.size())}, labels));
  }
  test::TempDir dir;
};

TEST_F(FashionMnist, LoadsBothSplitsFromTheOverriddenFolder) {
  writeSplit("train", 3, std::string("\x00\x09\x04", 3));
  writeSplit("t10k", 2, std::string("\x07\x01", 2));
  ScopedDatasetDir env(dir.path().string());
  EXPECT_EQ(fashionMnistDirectory(), dir.path().string());
  const FashionMnistSplit train = loadFashionMnist(FashionMnistPart::Train);
  EXPECT_EQ(train.count, 3);
  EXPECT_EQ(train.images.size(), 3u * 28 * 28);
  EXPECT_EQ(train.images[28 * 28 + 1], (28 * 28 + 1) % 256);
  EXPECT_EQ(train.labels, (std::vector<uint8_t>{0, 9, 4}));
  const FashionMnistSplit test = loadFashionMnist(FashionMnistPart::Test);
  EXPECT_EQ(test.count, 2);
  EXPECT_EQ(test.labels, (std::vector<uint8_t>{7, 1}));
}

TEST_F(FashionMnist, MissingFilesSayHowToInstallThem) {
  ScopedDatasetDir env(dir.file("nowhere"));
  EXPECT_TRUE(throwsWith<FileError>(
      [] { (void)loadFashionMnist(FashionMnistPart::Test); },
      {"t10k-images-idx3-ubyte.gz", "install dataset-fashion-mnist", "scripts/setup does", "TL_FASHION_MNIST_DIR"}));
}

TEST_F(FashionMnist, InconsistentFilesAreRefused) {
  ScopedDatasetDir env(dir.path().string());
  writeSplit("t10k", 2, std::string("\x07\x0a", 2));
  EXPECT_TRUE(throwsWith<FileError>([] { (void)loadFashionMnist(FashionMnistPart::Test); },
                                    {"t10k-labels-idx1-ubyte.gz", "label 1 is 10", "0..9"}));
  writeSplit("t10k", 2, std::string("\x07", 1));
  EXPECT_TRUE(throwsWith<FileError>([] { (void)loadFashionMnist(FashionMnistPart::Test); }, {"1 labels for 2 images"}));
  writeSplit("t10k", 2, std::string("\x07\x01", 2), 27);
  EXPECT_TRUE(throwsWith<FileError>([] { (void)loadFashionMnist(FashionMnistPart::Test); }, {"not N×28×28"}));
}

TEST(FashionMnistClasses, TenNamesInDatasetOrder) {
  const auto& names = fashionMnistClassNames();
  EXPECT_EQ(names.front(), "T-shirt/top");
  EXPECT_EQ(names[5], "Sandal");
  EXPECT_EQ(names.back(), "Ankle boot");
}

TEST(FashionMnistInstalled, RealTestSplitHasTenBalancedClasses) {
  const std::string debian = "/usr/share/datasets/fashion-mnist";
  // scripts/setup installs the package, so its absence is a broken set-up, not a reason to skip.
  ASSERT_TRUE(std::filesystem::exists(debian + "/t10k-images-idx3-ubyte.gz"))
      << "dataset-fashion-mnist is not installed; run scripts/setup";
  ScopedDatasetDir env(debian);
  const FashionMnistSplit split = loadFashionMnist(FashionMnistPart::Test);
  EXPECT_EQ(split.count, 10000);
  EXPECT_EQ(split.images.size(), size_t(10000) * 28 * 28);
  std::vector<int> perClass(10, 0);
  for (uint8_t label : split.labels) {
    ASSERT_LT(label, 10);
    ++perClass[label];
  }
  EXPECT_EQ(perClass, std::vector<int>(10, 1000));
}

}  // namespace
}  // namespace tl
