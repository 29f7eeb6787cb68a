#include "rankdecay/attention_record.h"

namespace tl::rankdecay {

AttentionRecord AttentionRecord::sized(int layers, int samples, int heads) {
  AttentionRecord record;
  record.layers = layers;
  record.samples = samples;
  record.heads = heads;
  const size_t count = size_t(layers) * samples * heads;
  record.attention.resize(count);
  record.errors.resize(count);
  record.outputs.resize(size_t(samples));
  return record;
}

}  // namespace tl::rankdecay
