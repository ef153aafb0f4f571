#!/usr/bin/env bash
# Builds, on the controller, a real SGLang server for the lent GPU machine (torch 2.11.0+cu130,
# Python 3.12, no network, 64 MiB carried per call), as archives in .devcarry/sglang/ (ignored by
# git; the device call names .devcarry/sglang in its carry):
#   site.tar.xz   sglang 0.5.17 (the release whose metadata pins torch==2.11.0) with the pins it
#                 declares (sglang-kernel 0.4.5, flashinfer-python 0.6.15.post1, transformers
#                 5.12.1 with tokenizers 0.22.2, xgrammar 0.2.1) and what the server imports that
#                 the machine's image lacks; cut to what a Qwen2 server on SM 9.0 loads
#   ansible.tar.xz  ansible-core 2.19.14, so the project's own playbooks and modules run there
#                 with connection: local (jinja2, PyYAML and MarkupSafe are in the image)
# What is left out, and why (docs/testing.md, "A real SGLang on the lent GPU"):
#   sglang-kernel: FA3's flash_ops (1.1 GB), the sm100 objects, flashmla and infllm ops
#   sglang: the optional Rust _core extensions and multimodal_gen
#   flashinfer: the cutlass headers (its FA2 attention templates do not include them; the
#     toolkit's own CCCL stands in for the bundled copy)
#   xgrammar: its 65 MB static library (the shared one stays)
# The machine's transformers 5.17 breaks sglang 0.5.17's import ("'qwen3_asr' is already used by a
# Transformers config"), so transformers 5.12.1 travels; IPython is a two-file stand-in for
# sglang/utils.py's notebook helpers (tests/device/ipython_stub).
# Then on the GPU machine: bash tests/device/run_sglang_gpu.sh
# usage: bash tests/device/carry_sglang.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=.devcarry/sglang
WORK=${CARRY_WORK:-$(mktemp -d)}
[ -n "${CARRY_WORK:-}" ] || trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/whl" "$DEST"
dl() {
  nice -n 19 python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --abi cp312 --abi abi3 --abi none --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 --platform linux_x86_64 --platform any \
    -d "$WORK/whl" "$@"
}
dl sglang==0.5.17 sglang-kernel==0.4.5 flashinfer-python==0.6.15.post1 apache-tvm-ffi==0.1.11 \
  xgrammar==0.2.1 transformers==5.12.1 tokenizers==0.22.2 openai==2.6.1 opentelemetry-api==1.45.3 \
  fastapi==0.165.0 starlette==1.10.0 uvicorn==0.55.0 pydantic==2.14.4 pydantic-core==2.50.5 \
  annotated-types==0.8.0 typing-inspection==0.4.5 python-multipart==0.0.34 orjson==3.13.0 \
  msgspec==0.23.0 pybase64==1.5.1 pyzmq==27.3.0 setproctitle==1.3.8 partial-json-parser==0.2.1.1.post7 \
  zstandard==0.25.0 jiter==0.19.0 distro==1.9.0 sniffio==1.3.1 compressed-tensors==0.20.1 gguf==0.19.0 \
  dill==0.4.1 jsonschema==4.26.0 referencing==0.37.0 rpds-py==2026.9.1 jsonschema-specifications==2025.9.1 \
  soundfile==0.14.0 cffi==2.1.1 pycparser==3.12 interegular==0.3.3 loguru==0.7.3 ansible-core==2.19.14
site=$WORK/site ans=$WORK/ansible
rm -rf "$site" "$ans"; mkdir -p "$site" "$ans"
(
  cd "$site"
  for w in "$WORK"/whl/*.whl; do
    case "$w" in
      */sglang-0.5.17-*) nice -n 19 unzip -q -o "$w" -x 'sglang/srt/server/_core*' 'sglang/srt/grpc/_core*' \
        'sglang/srt/multimodal/_core*' 'sglang/multimodal_gen/*' ;;
      */sglang_kernel-*) nice -n 19 unzip -q -o "$w" -x 'sgl_kernel/flash_ops*' 'sgl_kernel/infllm_ops*' \
        'sgl_kernel/sm100/*' 'sgl_kernel/flashmla_ops*' ;;
      */flashinfer_python-*) nice -n 19 unzip -q -o "$w" -x 'flashinfer/data/cutlass/*' 'flashinfer/data/cccl/*' ;;
      */xgrammar-*) nice -n 19 unzip -q -o "$w" -x 'xgrammar/lib/*.a' ;;
      */ansible_core-*) (cd "$ans" && nice -n 19 unzip -q -o "$w") ;;
      *) nice -n 19 unzip -q -o "$w" ;;
    esac
  done
  rm -f build_backend.py build_utils.py zstandard/_cffi*.so
  mkdir -p IPython && cp "$HERE"/ipython_stub/*.py IPython/
  find . -name '__pycache__' -prune -exec rm -rf {} +
)
(cd "$site" && nice -n 19 tar -cf - . | nice -n 19 xz -9e -T2 >"$OLDPWD/$DEST/site.tar.xz")
(cd "$ans" && nice -n 19 tar -cf - ansible ansible_core-*.dist-info | nice -n 19 xz -9 -T2 >"$OLDPWD/$DEST/ansible.tar.xz")
ls -l "$DEST"
du -sh "$DEST"
