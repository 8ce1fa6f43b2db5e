"""The segmentation networks of Checkmate's and MOCCASIN's benchmarks, as PyTorch users write
them: the modules roam's C++ generator mirrors op for op (`gen/segmentation.h`, the families
fcn8, segnet and unet; docs/generators.md). tests/gen/data/torch_reference.py records their
PyTorch 1.13 steps from these classes. Each returns per-pixel logits [N, classes, H, W] for a
cross-entropy against labels [N, H, W].
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class FCN8s(nn.Module):
    """FCN-8s on VGG-16 (Long et al. 2015), padded as keras_segmentation's fcn_8 that Checkmate
    trained: 'same' convolutions, each upsampled map cropped at its bottom and right to the skip
    it is added to, the last one to the image."""

    def __init__(self, num_classes, dropout=0.5):
        super().__init__()
        import torchvision

        self.features = torchvision.models.vgg16().features
        self.fc6 = nn.Conv2d(512, 4096, 7, padding=3)
        self.fc7 = nn.Conv2d(4096, 4096, 1)
        self.drop6 = nn.Dropout(dropout)
        self.drop7 = nn.Dropout(dropout)
        self.score_fr = nn.Conv2d(4096, num_classes, 1)
        self.upscore2 = nn.ConvTranspose2d(num_classes, num_classes, 4, stride=2, bias=False)
        self.score_pool4 = nn.Conv2d(512, num_classes, 1)
        self.upscore_pool4 = nn.ConvTranspose2d(num_classes, num_classes, 4, stride=2,
                                                bias=False)
        self.score_pool3 = nn.Conv2d(256, num_classes, 1)
        self.upscore8 = nn.ConvTranspose2d(num_classes, num_classes, 16, stride=8, bias=False)

    def forward(self, x):
        height, width = x.shape[2:]
        pool3 = self.features[:17](x)
        pool4 = self.features[17:24](pool3)
        pool5 = self.features[24:](pool4)
        h = self.drop6(F.relu(self.fc6(pool5), inplace=True))
        h = self.drop7(F.relu(self.fc7(h), inplace=True))
        h = self.upscore2(self.score_fr(h))
        p4 = self.score_pool4(pool4)
        h = h[..., :p4.size(2), :p4.size(3)] + p4
        h = self.upscore_pool4(h)
        p3 = self.score_pool3(pool3)
        h = h[..., :p3.size(2), :p3.size(3)] + p3
        return self.upscore8(h)[..., :height, :width]


def _conv_bn_relu(inputs, outputs, bias=True):
    return [nn.Conv2d(inputs, outputs, 3, padding=1, bias=bias), nn.BatchNorm2d(outputs),
            nn.ReLU(inplace=True)]


def _stages(widths, channels):
    """One nn.Sequential of conv-BN-ReLU per list of output widths: (the stages, their output
    channels)."""
    stages = nn.ModuleList()
    for stage in widths:
        layers = []
        for out in stage:
            layers += _conv_bn_relu(channels, out)
            channels = out
        stages.append(nn.Sequential(*layers))
    return stages, channels


class SegNet(nn.Module):
    """SegNet (Badrinarayanan et al. 2017): VGG-16's 13 convolutions with batch norm, pooling
    indices carried to a mirrored decoder that unpools with them."""

    ENCODER = [[64, 64], [128, 128], [256, 256, 256], [512, 512, 512], [512, 512, 512]]
    DECODER = [[512, 512, 512], [512, 512, 256], [256, 256, 128], [128, 64], [64]]

    def __init__(self, num_classes):
        super().__init__()
        self.enc, channels = _stages(self.ENCODER, 3)
        self.dec, channels = _stages(self.DECODER, channels)
        self.dec[-1].append(nn.Conv2d(channels, num_classes, 3, padding=1))

    def forward(self, x):
        saved = []
        for encode in self.enc:
            x = encode(x)
            size = x.size()
            x, indices = F.max_pool2d(x, 2, 2, return_indices=True)
            saved.append((indices, size))
        for decode, (indices, size) in zip(self.dec, reversed(saved)):
            x = decode(F.max_unpool2d(x, indices, 2, 2, output_size=size))
        return x


class DoubleConv(nn.Sequential):
    def __init__(self, inputs, outputs):
        super().__init__(*_conv_bn_relu(inputs, outputs, bias=False),
                         *_conv_bn_relu(outputs, outputs, bias=False))


class UNet(nn.Module):
    """U-Net (Ronneberger et al. 2015) as milesial's Pytorch-UNet builds it (same-padded
    convolutions with batch norm, transposed-convolution upsampling), at image sizes that are
    multiples of 16, where its F.pad pads nothing."""

    def __init__(self, num_classes):
        super().__init__()
        ch = [64, 128, 256, 512, 1024]
        self.inc = DoubleConv(3, 64)
        self.down = nn.ModuleList([DoubleConv(ch[i], ch[i + 1]) for i in range(4)])
        self.up = nn.ModuleList([nn.ConvTranspose2d(ch[i + 1], ch[i], 2, stride=2)
                                 for i in reversed(range(4))])
        self.upconv = nn.ModuleList([DoubleConv(ch[i + 1], ch[i]) for i in reversed(range(4))])
        self.outc = nn.Conv2d(64, num_classes, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        for down in self.down:
            skips.append(down(F.max_pool2d(skips[-1], 2)))
        x = skips.pop()
        for up, conv in zip(self.up, self.upconv):
            x = conv(torch.cat([skips.pop(), up(x)], dim=1))
        return self.outc(x)


MODELS = {"fcn8": FCN8s, "segnet": SegNet, "unet": UNet}


def build(name, num_classes, **kwargs):
    """The model of config family `name` (fcn8, segnet, unet); fcn8 takes dropout."""
    return MODELS[name](num_classes, **kwargs)
