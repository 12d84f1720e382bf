#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""lab/train_cifar.py --init-from (continuing an exported model with a new schedule, issue 18), on the CPU:

  - each bundled model loads into the network of its --arch at --size large with every tensor bit-exact (fp16 in
    the file, fp32 in the network: the widening is exact), and that network's logits match PyTorch run on the
    file's tensors converted by hand;
  - a file of the other architecture, or of the same one at another size, is refused with a message naming it,
    and the network keeps its weights.
Exit 77 without PyTorch."""
import contextlib
import io
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import check, summary, training_tools  # the shared check counter

training_tools()  # exit 77 without PyTorch; lab/ and tools/ on sys.path
import torch  # noqa: E402
import train_cifar  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MODELS = {arch: os.path.join(REPO, "assets", "models", f"{arch}_cifar10.vkvit") for arch in ("vit5", "vil")}


def refused(net, arch, config, path):
    """init_weights must exit with a message naming the file and leave net's weights as they were."""
    before = {k: v.clone() for k, v in net.state_dict().items()}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            train_cifar.init_weights(net, arch, config, path)
    except SystemExit as e:
        unchanged = all(torch.equal(before[k], v) for k, v in net.state_dict().items())
        return path in str(e.code) and unchanged
    return False


torch.manual_seed(0)
for arch, path in MODELS.items():
    config = train_cifar.model_config(arch, "large")
    net = train_cifar.build(arch, config).eval()
    with contextlib.redirect_stdout(io.StringIO()):
        train_cifar.init_weights(net, arch, config, path)
    tensors, _ = train_cifar.vkvit_file.read_model(path)
    state = net.state_dict()
    check(set(state) == set(tensors), f"{arch}: the network has exactly the file's tensors")
    exact = all(torch.equal(state[k], tensors[k].to(state[k].dtype)) for k in tensors)
    check(exact, f"{arch}: every tensor loaded bit-exact from {os.path.basename(path)}")

    x = torch.randn(2, 32, 32, 3)
    by_hand = train_cifar.build(arch, config).eval()
    by_hand.load_state_dict({k: v.float() for k, v in tensors.items()})
    with torch.no_grad():
        diff = float((net(x) - by_hand(x)).abs().max())
    check(diff == 0.0, f"{arch}: logits equal to the file's tensors loaded by hand (max |diff| {diff})")

    other = "vil" if arch == "vit5" else "vit5"
    check(refused(net, arch, config, MODELS[other]), f"{arch}: the {other} file is refused, weights kept")
    demo = train_cifar.build(arch, train_cifar.model_config(arch, "demo"))
    check(refused(demo, arch, train_cifar.model_config(arch, "demo"), path),
          f"{arch}: the large file is refused by the demo-size network, weights kept")

sys.exit(summary())
