// The segmentation families (docs/generators.md, "fcn8, segnet, unet"): the encoder-decoder
// networks of Checkmate's and MOCCASIN's benchmarks, written as PyTorch modules the way their
// papers describe them (tools/torch_export/roam_torch/segmentation.py holds the modules; the
// PyTorch exporter traces them), trained with a per-pixel cross-entropy over num_classes classes at
// image_size x image_size.
#pragma once

#include "core/graph.h"
#include "gen/config.h"

namespace roam::gen {

// FCN-8s on VGG-16 (Long et al. 2015), padded as keras_segmentation's fcn_8 that Checkmate
// used: same-padded convolutions, each upsampled map cropped at its bottom and right to the
// skip it is added to, the last one to the image.
Graph Fcn8(const ModelConfig& model, const TrainingConfig& training);

// SegNet (Badrinarayanan et al. 2017): VGG-16's 13 convolutions with batch norm; each max
// pool's indices are kept until the mirrored decoder unpools with them.
Graph Segnet(const ModelConfig& model, const TrainingConfig& training);

// U-Net (Ronneberger et al. 2015) as milesial's Pytorch-UNet builds it: same-padded
// convolutions with batch norm, transposed-convolution upsampling, skips concatenated. The
// image size is a multiple of 16 (config/ checks it), where its F.pad pads nothing.
Graph Unet(const ModelConfig& model, const TrainingConfig& training);

}  // namespace roam::gen
