# GenieX server image: `geniex serve` on 0.0.0.0:18181, configured by GENIEX_* variables.
#
#   docker build -t geniex .
#   docker run --rm -p 127.0.0.1:18181:18181 -v "$HOME/.cache/geniex/models:/models:ro" \
#     -e GENIEX_MODEL=/models/gemma-3-270m-q4_k_m.gguf -e GENIEX_API_KEY=secret --cpus 4 geniex
#   docker run --rm -v "$HOME/.cache/geniex/models:/models:ro" geniex \
#     run -m /models/gemma-3-270m-q4_k_m.gguf -p Hi
#   docker compose up       (compose.yaml: model volume, API key from a secret file)
#
# Two stages on Debian 12 (bookworm): the build stage compiles and installs the release tree into
# /opt/geniex; the runtime stage (bookworm-slim) gets bin/geniex and the NPU plugins and only the
# packages of the shared libraries the binary links (DT_NEEDED), which
# scripts/check_runtime_deps.py compares with `ldd` of the installed binary in CI. CPU kernels
# are picked at run time (no -march=native): one image per architecture. Threads default to the
# container's CPU quota (--cpus), not the host's core count.
#
# Checked in CI: hadolint (tests/python/test_container.py) and the runtime package list; the
# installed tree the image copies is tested (test_install.py, test_health.py: serve configured by
# variables only, health). `docker build` has never run here: the machines have the docker client
# but no engine. scripts/build_image.sh builds this file with Debian's podman instead (RUN steps in
# chroot isolation, the two bases a Debian 12 mmdebstrap minbase root imported under their names,
# no registry) and smoke-runs the image (serve as uid 10001 from its ENV, HEALTHCHECK healthy):
# that passed once by hand (36 min at BUILD_JOBS=2 on a loaded 2-core machine, too slow for CI).

FROM debian:bookworm AS build
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake ninja-build pkgconf \
      libpcre2-dev libicu-dev nlohmann-json3-dev libcli11-dev libboost-dev \
      libcurl4-openssl-dev libssl-dev zlib1g-dev libstb-dev libwebp-dev libjpeg62-turbo-dev \
      opencl-headers \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Compile jobs (empty: the build tool's default, all cores).
ARG BUILD_JOBS=""
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGENIEX_BUILD_TESTS=OFF \
      -DGENIEX_BUILD_PYTHON=OFF \
 && cmake --build /build --parallel ${BUILD_JOBS} \
 && cmake --install /build --prefix /opt/geniex --strip

FROM debian:bookworm-slim
# Runtime packages: exactly those holding the libraries bin/geniex and the plugins link
# (scripts/check_runtime_deps.py keeps this list equal to ldd's answer).
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends libc6 libcurl4 libgcc-s1 libicu72 \
      libjpeg62-turbo libpcre2-8-0 libssl3 libstb0 libstdc++6 libwebp7 zlib1g \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 geniex \
 && useradd --system --uid 10001 --gid geniex --home-dir /var/lib/geniex geniex \
 && install -d -o geniex -g geniex /models /var/lib/geniex
COPY --from=build /opt/geniex/bin/geniex /opt/geniex/bin/geniex
COPY --from=build /opt/geniex/lib/geniex/plugins /opt/geniex/lib/geniex/plugins
ENV PATH=/opt/geniex/bin:$PATH \
    GENIEX_HOST=0.0.0.0 \
    GENIEX_PORT=18181 \
    GENIEX_MODEL=/models/model.gguf
USER 10001:10001
WORKDIR /var/lib/geniex
VOLUME ["/models"]
EXPOSE 18181
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["geniex", "health"]
ENTRYPOINT ["geniex"]
CMD ["serve"]
