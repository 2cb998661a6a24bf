#!/bin/sh
# deps.sh - install the Debian packages that build, tests and demo need, and
# only those that are missing (idempotent; apt-get runs only when needed).
# Open MPI is optional for the build (MPI=auto) but installed here so that the
# mpi sync backend is built and its tests (over network namespaces: iproute2)
# run. fortunes and fortunes-min are the text corpus of make demo-lm
# (/usr/share/games/fortunes, 2.6 MB together). libdnnl-dev (oneDNN) runs the cpu backend's
# convolutions and pooling. libpcre2-dev (PCRE2) runs GPT-2's pre-tokenizer
# pattern, whose Unicode classes POSIX regex lacks. libpng-dev and
# libjpeg62-turbo-dev decode PNG and JPEG sources of mgpu-shard. python3-pil
# (Pillow) draws the pose data set of examples/make_pose_data.py. libomp-dev
# gives clang omp.h: the fuzz harnesses build all of lib/ with clang.
# python3-pip fetches UEA BasicMotions (pip download of the aeon wheel,
# which installs nothing) for make demo-cnn and data-basicmotions.
set -eu
pkgs="build-essential libopenblas-dev libzstd-dev libarchive-dev zlib1g-dev
libpng-dev libjpeg62-turbo-dev dataset-fashion-mnist mandoc python3 python3-numpy python3-pil python3-pip
libarchive-tools zstd
clang libclang-rt-14-dev libomp-dev libopenmpi-dev openmpi-bin iproute2 procps bsdutils
fortunes-min fortunes libdnnl-dev libpcre2-dev"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
sudo=
[ "$(id -u)" = 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
