"""README.md's install command for roam_torch, run as written (on a copy of the package, so
the build leaves nothing in the tree) into a fresh target directory, and the installed package
used from outside the repository."""

import os
import re
import shutil
import sys
import subprocess
import tempfile
import textwrap
import unittest

import support


def readme_install_command():
    with open(os.path.join(support.SOURCE_DIR, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^python3 -m pip install (.*) --target (\S+) (\S+)$", text, re.M)
    if m is None:
        raise AssertionError("README.md has no `python3 -m pip install ... --target DIR PATH` "
                             "line")
    return m.group(1).split(), m.group(3)


class Install(unittest.TestCase):
    def test_readme_command_installs_a_working_package(self):
        options, path = readme_install_command()
        self.assertEqual(path, "tools/torch_export")
        with tempfile.TemporaryDirectory(prefix="roam-install-") as d:
            src = os.path.join(d, "src")
            os.makedirs(src)
            for name in ("pyproject.toml", "README.md"):
                shutil.copy(os.path.join(support.TOOL_DIR, name), src)
            shutil.copytree(os.path.join(support.TOOL_DIR, "roam_torch"),
                            os.path.join(src, "roam_torch"),
                            ignore=shutil.ignore_patterns("__pycache__"))
            target = os.path.join(d, "target")
            r = subprocess.run([sys.executable, "-m", "pip", "install", *options,
                                "--target", target, src], capture_output=True, text=True,
                               cwd=d)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            script = textwrap.dedent("""
                import torch, roam_torch
                print(roam_torch.__file__)
                torch.manual_seed(0)
                model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
                opt = torch.optim.Adam(model.parameters(), lr=0.1)
                eager = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
                eager.load_state_dict(model.state_dict())
                eager_opt = torch.optim.Adam(eager.parameters(), lr=0.1)
                loss_fn = torch.nn.functional.mse_loss
                x, y = torch.randn(2, 4), torch.randn(2, 3)
                planned = roam_torch.plan_training_step(model, opt, loss_fn, x, y)
                loss = planned.step(x, y)
                eager_loss = loss_fn(eager(x), y)
                eager_loss.backward()
                eager_opt.step()
                assert torch.equal(loss, eager_loss.detach())
                assert all(torch.equal(a, b) for a, b in zip(model.parameters(),
                                                             eager.parameters()))
                # The allocator's C++ source ships with the package and builds from there.
                assert planned.memory()["op_scratch_in_arena"] == "yes", planned.memory()
                print("ok", planned.memory()["arena_bytes"])
            """)
            env = {**os.environ, "PYTHONPATH": target, "ROAM_BINARY": support.roam_binary()}
            r = subprocess.run([sys.executable, "-c", script], capture_output=True,
                               text=True, cwd=d, env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            lines = r.stdout.splitlines()
            self.assertTrue(lines[0].startswith(os.path.join(target, "roam_torch")), lines)
            self.assertTrue(lines[-1].startswith("ok "), lines)


if __name__ == "__main__":
    unittest.main()
