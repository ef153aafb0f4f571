#!/usr/bin/env python3
"""Build a local stand-in for NVIDIA's flat CUDA apt repository, signed with a fresh GPG key.

NVIDIA's repository is unreachable from the test machines, so the Molecule scenario builds one
with the same layout inside the container:

  <www>/debian12/x86_64/3bf863cc.pub          ASCII-armoured public key (name as NVIDIA's)
  <www>/debian12/x86_64/Packages(.gz)         index of the .debs
  <www>/debian12/x86_64/Release, InRelease, Release.gpg   signed with the key
  <www>/debian12/x86_64/cuda-toolkit-13-0_13.0.88-1_<arch>.deb

The dummy cuda-toolkit-13-0 lays out /usr/local/cuda-13.0/bin/nvcc, which prints NVIDIA's
`nvcc --version` text for 13.0.88, and an empty lib64/. Usage: build_fake_cuda_repo.py WWW_ROOT
"""

import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

NVCC = """#!/bin/sh
# stand-in for NVIDIA's nvcc, built by molecule/cuda_toolkit (no compiler inside)
cat <<'OUT'
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release {release}, V{full}
Build cuda_{release}.r{release}/compiler.36424714_0
OUT
"""


def sh(*argv, **kw):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, **kw).stdout


def build_deb(repo, name, version, release, full, arch):
    root = tempfile.mkdtemp()
    home = os.path.join(root, "usr", "local", "cuda-" + release)
    os.makedirs(os.path.join(home, "bin"))
    os.makedirs(os.path.join(home, "lib64"))
    with open(os.path.join(home, "bin", "nvcc"), "w") as handle:
        handle.write(NVCC.format(release=release, full=full))
    os.chmod(os.path.join(home, "bin", "nvcc"), 0o755)
    with open(os.path.join(home, "version.json"), "w") as handle:
        handle.write('{"cuda": {"name": "CUDA SDK", "version": "%s"}}\n' % full)
    os.makedirs(os.path.join(root, "DEBIAN"))
    with open(os.path.join(root, "DEBIAN", "control"), "w") as handle:
        handle.write("Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: molecule test "
                     "<cuda-test@example.invalid>\nSection: devel\nPriority: optional\n"
                     "Description: test stand-in for NVIDIA's %s\n" % (name, version, arch, name))
    deb = os.path.join(repo, "%s_%s_%s.deb" % (name, version, arch))
    sh("dpkg-deb", "--root-owner-group", "--build", root, deb)
    shutil.rmtree(root)
    return deb


def packages_stanza(deb, repo):
    control = sh("dpkg-deb", "--field", deb).decode()
    data = open(deb, "rb").read()
    return (control.rstrip("\n") + "\nFilename: ./%s\nSize: %d\nMD5sum: %s\nSHA256: %s\n" % (
        os.path.relpath(deb, repo), len(data), hashlib.md5(data).hexdigest(),
        hashlib.sha256(data).hexdigest()))


def main():
    www = sys.argv[1]
    repo = os.path.join(www, "debian12", "x86_64")
    os.makedirs(repo, exist_ok=True)
    arch = sh("dpkg", "--print-architecture").decode().strip()
    debs = [build_deb(repo, "cuda-toolkit-13-0", "13.0.88-1", "13.0", "13.0.88", arch)]
    index = "\n".join(packages_stanza(deb, repo) for deb in debs)
    with open(os.path.join(repo, "Packages"), "w") as handle:
        handle.write(index)
    with gzip.open(os.path.join(repo, "Packages.gz"), "wt") as handle:
        handle.write(index)
    lines = ["Origin: NVIDIA (molecule stand-in)", "Label: NVIDIA CUDA", "Architecture: %s" % arch,
             "Date: %s" % time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime()), "SHA256:"]
    for name in ("Packages", "Packages.gz"):
        data = open(os.path.join(repo, name), "rb").read()
        lines.append(" %s %d %s" % (hashlib.sha256(data).hexdigest(), len(data), name))
    with open(os.path.join(repo, "Release"), "w") as handle:
        handle.write("\n".join(lines) + "\n")

    gnupg = tempfile.mkdtemp()
    os.chmod(gnupg, 0o700)
    env = dict(os.environ, GNUPGHOME=gnupg)
    gpg = ["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", ""]
    sh(*gpg, "--quick-generate-key", "CUDA test repo <cuda-test@example.invalid>", "ed25519",
       "sign", "never", env=env)
    with open(os.path.join(repo, "3bf863cc.pub"), "wb") as handle:
        handle.write(sh(*gpg, "--armor", "--export", env=env))
    sh(*gpg, "--yes", "--clearsign", "-o", os.path.join(repo, "InRelease"),
       os.path.join(repo, "Release"), env=env)
    sh(*gpg, "--yes", "--armor", "--detach-sign", "-o", os.path.join(repo, "Release.gpg"),
       os.path.join(repo, "Release"), env=env)
    subprocess.run(["gpgconf", "--kill", "all"], env=env, check=False)
    shutil.rmtree(gnupg, ignore_errors=True)
    print("repository built in %s: %s" % (repo, ", ".join(sorted(os.listdir(repo)))))


if __name__ == "__main__":
    main()
