#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""lab/cifar_teacher.py and the distillation loss of lab/train_cifar.py --teacher (issue 18), on the CPU:

  - cutout blanks one square of at most 8x8 pixels per image (exactly 8x8 where it lies inside), at a random place,
    leaves every other pixel and every channel outside it as it was, and repeats for the same generator seed;
  - the ResNet-9 maps [B, 3, 32, 32] to [B, 10]; a saved teacher (fp16 weights) loads back in eval mode with
    logits equal to the network's own with its weights rounded to fp16, and a file of another kind is refused;
  - a teacher of another --width loads back at that width;
  - lab/gpu_train_cifar.sh refuses --teachers without --teacher-epochs, a count below 1 and a missing --teacher;
  - an ensemble of saved teachers gives the mean of their probabilities (one teacher: its softmax), and
    train_cifar.py takes --teacher more than once;
  - student_loss: distill 0 is the label loss alone (hard labels and soft targets), distill 1 is KL(teacher ||
    student) computed by hand, and the gradient on the logits is (1 - w)(p - target) / B + w (p - soft) / B.
Exit 77 without PyTorch."""
import contextlib
import io
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import check, summary, training_tools  # the shared check counter

training_tools()  # exit 77 without PyTorch; lab/ and tools/ on sys.path
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import cifar_teacher  # noqa: E402
import train_cifar  # noqa: E402

torch.manual_seed(0)

# cutout
x = torch.rand(64, 3, 32, 32) + 0.5                     # no pixel is 0 before the cutout
out = cifar_teacher.cutout(x, torch.Generator().manual_seed(5))
blank = (out == 0)
check(bool((blank.all(1) == blank.any(1)).all()), "cutout blanks every channel of a pixel or none")
sizes, inside, square, others_kept = [], 0, True, True
for i in range(len(x)):
    ys, xs = torch.nonzero(blank[i, 0], as_tuple=True)
    n = len(ys)
    sizes.append(n)
    if n:
        h, w = int(ys.max() - ys.min() + 1), int(xs.max() - xs.min() + 1)
        square &= (h * w == n) and h <= 8 and w <= 8           # one filled rectangle, clipped square
        inside += (h, w) == (8, 8)
    others_kept &= bool(torch.equal(out[i][~blank[i]], x[i][~blank[i]]))
check(square and all(0 < n <= 64 for n in sizes), f"cutout: one square of at most 8x8 per image (sizes {sizes[:8]}...)")
check(inside > len(x) // 3, f"cutout: {inside} of {len(x)} squares lie wholly inside the image")
check(others_kept, "cutout leaves the pixels outside its square as they were")
check(torch.equal(out, cifar_teacher.cutout(x, torch.Generator().manual_seed(5))), "cutout repeats for a seed")
centres = {tuple(torch.nonzero(blank[i, 0]).float().mean(0).round().tolist()) for i in range(len(x))}
check(len(centres) > len(x) // 2, f"cutout: only {len(centres)} distinct places for {len(x)} images")

# the network, saved and loaded
net = cifar_teacher.ResNet9()
with torch.no_grad():                                    # BN statistics other than 0 / 1, as after training
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.uniform_(0.5, 1.5)
net.eval()
inp = torch.randn(4, 3, 32, 32)
check(tuple(net(inp).shape) == (4, 10), "ResNet9: [4, 3, 32, 32] -> [4, 10]")
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "teacher.pt")
    cifar_teacher.save(net, path, 0.5, 3)
    loaded, acc = cifar_teacher.load(path, torch.device("cpu"))
    rounded = cifar_teacher.ResNet9()
    rounded.load_state_dict({k: v.half().float() for k, v in net.state_dict().items()})
    rounded.eval()
    with torch.no_grad():
        diff = float((loaded(inp) - rounded(inp)).abs().max())
    check(not loaded.training and acc == 0.5 and diff == 0.0,
          f"a saved teacher loads back in eval mode, accuracy {acc}, logits max |diff| {diff} from fp16 weights")
    # an ensemble: the mean of its members' probabilities (train_cifar.py --teacher A --teacher B)
    net_b = cifar_teacher.ResNet9()
    net_b.eval()
    path_b = os.path.join(tmp, "teacher_b.pt")
    cifar_teacher.save(net_b, path_b, 0.25, 3)
    ensemble, accs = cifar_teacher.load_ensemble([path, path_b], torch.device("cpu"))
    loaded_b, _ = cifar_teacher.load(path_b, torch.device("cpu"))
    with torch.no_grad():
        probs = ensemble(inp)
        by_hand = (F.softmax(loaded(inp), 1) + F.softmax(loaded_b(inp), 1)) / 2
        alone = cifar_teacher.load_ensemble([path], torch.device("cpu"))[0](inp)
    check(accs == [0.5, 0.25] and not ensemble.training, f"load_ensemble: each member's accuracy {accs}, eval mode")
    check(torch.allclose(probs, by_hand, atol=1e-6) and torch.allclose(probs.sum(1), torch.ones(4)),
          f"an ensemble's output is the mean of its members' probabilities (max |diff| "
          f"{float((probs - by_hand).abs().max()):.2e})")
    check(torch.allclose(alone, F.softmax(loaded(inp), 1), atol=1e-6), "an ensemble of one: the teacher's softmax")
    check(cifar_teacher.evaluate(ensemble, inp, probs.argmax(1)) == 1.0, "evaluate takes an ensemble")
    args = train_cifar.parse_args(["--arch", "vit5", "--teacher", path, "--teacher", path_b])
    check(args.teacher == [path, path_b], f"train_cifar.py --teacher twice: both teachers ({args.teacher})")
    # --width: a wider (here narrower) teacher keeps its width through the file
    narrow = cifar_teacher.ResNet9(width=0.25)
    narrow.eval()
    n_params = sum(p.numel() for p in narrow.parameters())
    path_n = os.path.join(tmp, "teacher_narrow.pt")
    cifar_teacher.save(narrow, path_n, 0.1, 1)
    loaded_n, _ = cifar_teacher.load(path_n, torch.device("cpu"))
    with torch.no_grad():
        same = tuple(loaded_n(inp).shape) == (4, 10)
    check(same and loaded_n.width == 0.25 and sum(p.numel() for p in loaded_n.parameters()) == n_params
          and n_params < 500_000, f"a width-0.25 teacher ({n_params} parameters) loads back at its width")
    other = os.path.join(tmp, "other.pt")
    torch.save({"arch": "vgg", "state": {}}, other)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            cifar_teacher.load(other, torch.device("cpu"))
        check(False, "a file of another kind is refused")
    except SystemExit as e:
        check("not a resnet9" in str(e.code), f"a file of another kind is refused ({e.code})")

# the student's loss
B, C = 16, 10
logits = torch.randn(B, C) * 3
y = torch.randint(0, C, (B,))
target = F.softmax(torch.randn(B, C), 1)
soft = F.softmax(torch.randn(B, C) * 2, 1)
hard = train_cifar.student_loss(logits, y, y, 0.1, soft, 0.0)
check(torch.allclose(hard, F.cross_entropy(logits, y, label_smoothing=0.1)), "distill 0, hard labels: the label loss")
mixed = train_cifar.student_loss(logits, y, target, 0.1, None)
by_hand = (-(target * F.log_softmax(logits, 1)).sum(1)).mean()
check(torch.allclose(mixed, by_hand), "soft targets: the cross-entropy against them")
kl = (soft * (soft.log() - F.log_softmax(logits, 1))).sum(1).mean()
check(torch.allclose(train_cifar.student_loss(logits, y, target, 0.1, soft, 1.0), kl, atol=1e-6),
      "distill 1: KL(teacher || student)")
w = 0.3
leaf = logits.clone().requires_grad_(True)
train_cifar.student_loss(leaf, y, target, 0.1, soft, w).backward()
p = F.softmax(logits, 1)
expected = ((1 - w) * (p - target) + w * (p - soft)) / B
check(torch.allclose(leaf.grad, expected, atol=1e-6),
      f"gradient on the logits (max |diff| {float((leaf.grad - expected).abs().max()):.2e})")

# lab/gpu_train_cifar.sh refuses a teacher count it cannot honour before it decodes or trains anything
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lab", "gpu_train_cifar.sh")
with tempfile.TemporaryDirectory() as tmp:
    for args, words in ((["--teachers", "3"], "needs --teacher-epochs"),
                        (["--teachers", "0", "--teacher-epochs", "2"], "count >= 1"),
                        (["--teacher", os.path.join(tmp, "missing.pt")], "not found")):
        r = subprocess.run(["bash", script, "--data", script, *args, os.path.join(tmp, "out")],  # any file as --data
                           capture_output=True, text=True)
        check(r.returncode == 2 and words in r.stderr and not os.path.exists(os.path.join(tmp, "out")),
              f"gpu_train_cifar.sh {' '.join(args)}: exit {r.returncode}, {r.stderr.strip()!r}")

sys.exit(summary())
