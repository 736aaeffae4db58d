// A decoding session: encode the source once, then step through the target one token at a time
// (the argmax, or a token the user picks), computing only the new row with cached keys and values;
// step back pops a row. What the Decoding view and `attnviz-cli decode` drive.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model.h"

namespace attnviz {

class DecodingSession {
 public:
  struct Step {
    int input_token = 0;   // token fed at this position (BOS for the first)
    int chosen = -1;       // token chosen after it (argmax unless the user picked), -1 until chosen
    Model::StepRows rows;  // this position's new attention rows and next-token logits
  };

  // Encodes `src` (unpadded ids) once. With masks.subsequent off, the cache cannot be used (a
  // position would need keys that do not exist yet); steps then rerun the whole decoder.
  DecodingSession(const Model& model, std::vector<int> src, MaskOptions masks = {},
                  int max_len = 0 /* 0 = model's max_len */);
  ~DecodingSession();

  const Model& model() const { return model_; }
  const std::vector<int>& source() const { return src_; }
  const AttentionTrace& encoderTrace() const { return enc_trace_; }
  const MaskOptions& masks() const { return masks_; }

  // Target ids so far: BOS followed by every chosen token.
  std::vector<int> targetIds() const;
  const std::vector<Step>& steps() const { return steps_; }
  int length() const { return static_cast<int>(steps_.size()); }

  // Appends a token after the last position (argmax of its logits when token < 0) and runs the
  // new position. Returns the chosen token. Throws Error(BadInput) when finished().
  int stepForward(int token = -1);
  // Removes the last position (not the first, BOS). Returns false when nothing is left to pop.
  bool stepBack();
  // True after EOS was chosen or when the target reached the maximum length.
  bool finished() const;
  // Runs until finished(); returns the generated ids (without BOS).
  std::vector<int> runToEnd();
  // Generated ids so far (without BOS; the last step's choice is pending until stepForward).
  std::vector<int> generated() const;

  // The top-k next tokens after the last position: (id, probability), most probable first.
  std::vector<std::pair<int, float>> topK(int k) const;

  // A teacher-forced forward pass over the current target (for the full heatmap views).
  Trace fullTrace(const ForwardOptions& options = {}) const;

 private:
  const Model& model_;
  std::vector<int> src_;
  MaskOptions masks_;
  int max_len_;
  bool use_cache_;
  std::shared_ptr<Model::EncoderOutput> enc_;
  std::unique_ptr<Model::DecoderCache> cache_;
  AttentionTrace enc_trace_;
  std::vector<Step> steps_;

  void runPosition(int token);
};

}  // namespace attnviz
