#include "vit/model_image.h"

#include <filesystem>
#include <memory>
#include <mutex>

#include "common/errors.h"
#include "data/image_file.h"
#include "data/image_resize.h"

namespace tl {
namespace {

constexpr const char* kDatasetPrefix = "fashion-mnist:";

// A split is read once per process (the GUI flips through images; eval walks the whole split).
const FashionMnistSplit& cachedSplit(FashionMnistPart part) {
  static std::mutex mutex;
  static std::unique_ptr<FashionMnistSplit> splits[2];
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = splits[part == FashionMnistPart::Train ? 0 : 1];
  if (!slot) slot = std::make_unique<FashionMnistSplit>(loadFashionMnist(part));
  return *slot;
}

const char* partName(FashionMnistPart part) { return part == FashionMnistPart::Train ? "train" : "test"; }

ModelImage fromImage(const Image& decoded, const VitConfig& config, std::string description,
                     std::optional<int> label) {
  const Image sized = decoded.height == config.imageSize && decoded.width == config.imageSize
                          ? decoded
                          : resizeBilinear(decoded, config.imageSize, config.imageSize);
  ModelImage image;
  image.description = std::move(description);
  image.label = label;
  const int C = config.numChannels, H = sized.height, W = sized.width;
  image.pixels.shape = {C, H, W};
  image.pixels.values.resize(size_t(C) * size_t(H) * size_t(W));
  for (int c = 0; c < C; ++c)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        image.pixels.values[(size_t(c) * H + y) * W + x] = sized.at(y, x, sized.channels == 1 ? 0 : c);
  return image;
}

}  // namespace

ImageSource ImageSource::parse(const std::string& text) {
  if (text.rfind(kDatasetPrefix, 0) != 0) {
    if (text.empty()) throw InvalidArgument("image: give a PNG/JPEG file or fashion-mnist:test:INDEX");
    ImageSource source;
    source.file = text;
    return source;
  }
  const std::string rest = text.substr(std::string(kDatasetPrefix).size());
  const auto colon = rest.find(':');
  const std::string split = rest.substr(0, colon), index = colon == std::string::npos ? "" : rest.substr(colon + 1);
  ImageSource source;
  if (split == "train") source.part = FashionMnistPart::Train;
  else if (split != "test")
    throw InvalidArgument("image '" + text + "': the split must be train or test, e.g. fashion-mnist:test:17");
  if (index.empty() || index.size() > 6 || index.find_first_not_of("0123456789") != std::string::npos)
    throw InvalidArgument("image '" + text + "': the index must be a non-negative integer, e.g. fashion-mnist:test:17");
  source.index = std::stoi(index);
  return source;
}

std::string ImageSource::toString() const {
  return isFile() ? file : std::string(kDatasetPrefix) + partName(part) + ":" + std::to_string(index);
}

ModelImage modelImageFromGrey(const uint8_t* grey28, const VitConfig& config, const std::string& description,
                              std::optional<int> label) {
  Image image;
  image.height = FashionMnistSplit::kRows;
  image.width = FashionMnistSplit::kCols;
  image.channels = 1;
  image.pixels.resize(size_t(image.height) * size_t(image.width));
  for (size_t p = 0; p < image.pixels.size(); ++p) image.pixels[p] = float(grey28[p]) / 255.0f;
  return fromImage(image, config, description, label);
}

ModelImage loadModelImage(const ImageSource& source, const VitConfig& config) {
  if (source.isFile()) {
    const Image decoded = readImageFile(source.file, config.numChannels == 1 ? ImageColor::Grey : ImageColor::Rgb);
    return fromImage(decoded, config, std::filesystem::path(source.file).filename().string(), std::nullopt);
  }
  const FashionMnistSplit& split = cachedSplit(source.part);
  if (source.index < 0 || source.index >= split.count)
    throw InvalidArgument("image " + source.toString() + ": the " + partName(source.part) + " split has images 0.." +
                          std::to_string(split.count - 1));
  const int label = split.labels[size_t(source.index)];
  const size_t pixels = size_t(FashionMnistSplit::kRows) * FashionMnistSplit::kCols;
  return modelImageFromGrey(split.images.data() + size_t(source.index) * pixels, config,
                            "fashion-mnist " + std::string(partName(source.part)) + " #" + std::to_string(source.index) +
                                " (" + fashionMnistClassNames()[size_t(label)] + ")",
                            label);
}

MatD greyImage(const ModelImage& image) {
  const std::vector<int64_t>& shape = image.pixels.shape;
  if (shape.size() != 3) throw InvalidArgument("model image: pixels are not C×H×W");
  const int64_t C = shape[0], H = shape[1], W = shape[2];
  MatD grey = MatD::Zero(H, W);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) grey(y, x) += image.pixels.values[size_t((c * H + y) * W + x)];
  return grey / double(std::max<int64_t>(C, 1));
}

}  // namespace tl
