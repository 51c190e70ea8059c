"""Reference architectures written in torch (torchvision does not install beside the CPU torch
used here): ResNet-18/50, MobileNet v2 and DenseNet as torchvision defines them, the DCGAN generator of
the PyTorch examples, and a small CNN for 8x8 digits.  Weights are seeded; batch-norm running
statistics are made non-trivial so that folding them is exercised.  Needs ``torch``.
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["resnet18", "resnet50", "mobilenet_v2", "densenet", "dcgan_generator", "DigitsCNN", "randomize_batch_norm"]


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision's ResNet v1.5 (stride on the 3x3 convolution of a bottleneck)."""

    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], 2)
        self.layer3 = self._make_layer(block, 256, layers[2], 2)
        self.layer4 = self._make_layer(block, 512, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def _make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _conv_bn_relu6(inp, oup, kernel=3, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(inp, oup, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(oup), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = [] if expand_ratio == 1 else [_conv_bn_relu6(inp, hidden, 1)]
        layers += [_conv_bn_relu6(hidden, hidden, 3, stride, groups=hidden),
                   nn.Conv2d(hidden, oup, 1, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision's MobileNet v2 (width 1.0)."""

    def __init__(self, num_classes=1000, width_mult=1.0):
        super().__init__()
        setting = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                   (6, 320, 1, 1)]
        inp = _make_divisible(32 * width_mult)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult))
        features = [_conv_bn_relu6(3, inp, stride=2)]
        for t, c, n, s in setting:
            out = _make_divisible(c * width_mult)
            for i in range(n):
                features.append(InvertedResidual(inp, out, s if i == 0 else 1, t))
                inp = out
        features.append(_conv_bn_relu6(inp, self.last_channel, 1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


class DCGANGenerator(nn.Module):
    """The DCGAN generator of the PyTorch examples: a latent (N, nz, 1, 1) to a (N, nc, 64, 64) image."""

    def __init__(self, nz=100, ngf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, x):
        return self.main(x)


class _DenseLayer(nn.Module):
    """Batch norm, ReLU, 1x1 conv, batch norm, ReLU, 3x3 conv on the concatenation of all
    earlier feature maps: the first batch norm cannot fold into a convolution before it."""

    def __init__(self, inp, growth, bn_size):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(inp)
        self.conv1 = nn.Conv2d(inp, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, features):
        x = torch.cat(features, 1)
        x = self.conv1(torch.relu(self.norm1(x)))
        return self.conv2(torch.relu(self.norm2(x)))


class _DenseBlock(nn.Module):
    def __init__(self, layers, inp, growth, bn_size):
        super().__init__()
        self.layers = nn.ModuleList(_DenseLayer(inp + i * growth, growth, bn_size) for i in range(layers))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


class DenseNet(nn.Module):
    """torchvision's DenseNet (BC): a 7x7 stem, dense blocks joined by transitions (batch norm,
    ReLU, 1x1 conv halving the channels, 2x2 average pool), a final batch norm and classifier."""

    def __init__(self, growth=32, blocks=(6, 12, 24, 16), init_features=64, bn_size=4, num_classes=1000):
        super().__init__()
        layers = [nn.Conv2d(3, init_features, 7, 2, 3, bias=False), nn.BatchNorm2d(init_features),
                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
        c = init_features
        for i, n in enumerate(blocks):
            layers.append(_DenseBlock(n, c, growth, bn_size))
            c += n * growth
            if i != len(blocks) - 1:
                layers += [nn.BatchNorm2d(c), nn.ReLU(inplace=True), nn.Conv2d(c, c // 2, 1, bias=False),
                           nn.AvgPool2d(2, 2)]
                c //= 2
        layers.append(nn.BatchNorm2d(c))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c, num_classes)

    def forward(self, x):
        x = torch.relu(self.features(x))
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class DigitsCNN(nn.Module):
    """A small CNN for scikit-learn's 8x8 digits: two 3x3 convolutions, a pool, a classifier."""

    def __init__(self, channels=16, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(2 * channels)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(2 * channels * 16, classes)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.pool(torch.relu(self.bn2(self.conv2(x))))
        return self.fc(torch.flatten(x, 1))


def randomize_batch_norm(model, seed=0):
    """Give every BatchNorm2d non-trivial running statistics and affine parameters (seeded)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) + 0.5)
                m.weight.copy_(torch.rand(n, generator=g) + 0.5)
                m.bias.copy_(torch.randn(n, generator=g) * 0.1)
    return model.eval()


def _seeded(build, seed):
    torch.manual_seed(seed)
    return randomize_batch_norm(build(), seed)


def resnet18(num_classes=1000, seed=0):
    return _seeded(lambda: ResNet(BasicBlock, [2, 2, 2, 2], num_classes), seed)


def resnet50(num_classes=1000, seed=0):
    return _seeded(lambda: ResNet(Bottleneck, [3, 4, 6, 3], num_classes), seed)


def mobilenet_v2(num_classes=1000, seed=0):
    return _seeded(lambda: MobileNetV2(num_classes), seed)


def densenet(num_classes=1000, growth=32, blocks=(6, 12, 24, 16), init_features=64, seed=0):
    """DenseNet-121 by default; smaller ``growth``/``blocks``/``init_features`` for tests."""
    return _seeded(lambda: DenseNet(growth, blocks, init_features, num_classes=num_classes), seed)


def dcgan_generator(nz=100, ngf=64, nc=3, seed=0):
    return _seeded(lambda: DCGANGenerator(nz, ngf, nc), seed)
