#!/usr/bin/env bash
# Builds the Dockerfile's image with Debian's podman on a machine without a Docker engine or a
# registry, and runs it once: the base images are a Debian 12 minbase root made by mmdebstrap
# (scripts/make_debian_root.sh) imported under the names the Dockerfile asks for, in this
# machine's local podman storage only.
#
#   scripts/build_image.sh [MODEL.gguf]        # default: tests/data/models/tiny-llama-q8_0.gguf
#
# RUN steps use --isolation chroot (no OCI runtime needed). The smoke run starts the image's
# ENTRYPOINT + CMD (`geniex serve`, configured by the image's ENV) as the image's user inside the
# image's root filesystem (podman mount + chroot, where crun may not run) and waits for the
# image's HEALTHCHECK command (`geniex health`) to answer healthy. Root only; the full build
# compiles the project (many minutes on 2 cores: not part of scripts/test.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODEL="${1:-$ROOT/tests/data/models/tiny-llama-q8_0.gguf}"
IMAGE=localhost/geniex:dev
JOBS="${JOBS:-2}"

command -v podman >/dev/null || { echo "build_image: podman not installed (apt-get install podman)" >&2; exit 1; }
TAR="$(bash "$ROOT/scripts/make_debian_root.sh")"
for name in docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim; do
  if ! podman image exists "$name"; then
    podman import --quiet "$TAR" "$name" >/dev/null
  fi
done

t0=$(date +%s)
podman build --pull=never --isolation chroot --network host --build-arg "BUILD_JOBS=$JOBS" \
  -t "$IMAGE" "$ROOT"
echo "build_image: built $IMAGE in $(($(date +%s) - t0)) s"
podman image inspect --format '{{.Config.User}} {{.Config.Entrypoint}} {{.Config.Cmd}} {{.Config.ExposedPorts}}' "$IMAGE"
podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "build_image: image size %.1f MB\n", $1 / 1e6}'

# Smoke run.
ctr="$(podman create "$IMAGE")"
mnt="$(podman mount "$ctr")"
cleanup() {
  [[ -n "${pid:-}" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  umount "$mnt/proc" 2>/dev/null || true
  podman umount "$ctr" >/dev/null || true
  podman rm "$ctr" >/dev/null || true
}
trap cleanup EXIT
cp "$MODEL" "$mnt/models/model.gguf"
mount -t proc proc "$mnt/proc"
user="$(podman image inspect --format '{{.Config.User}}' "$IMAGE")"
mapfile -t envs < <(podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$IMAGE" | grep .)
port=$((20000 + RANDOM % 20000))
chroot --userspec="$user" "$mnt" /usr/bin/env -i "${envs[@]}" GENIEX_PORT="$port" GENIEX_THREADS=1 \
  geniex serve &
pid=$!
for _ in $(seq 100); do
  if chroot --userspec="$user" "$mnt" /usr/bin/env -i "${envs[@]}" GENIEX_PORT="$port" geniex health; then
    echo "build_image: the image serves and its HEALTHCHECK passes"
    exit 0
  fi
  sleep 0.2
done
echo "build_image: geniex health never passed" >&2
exit 1
