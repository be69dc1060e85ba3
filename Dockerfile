# One image for the Spark master, the workers, the submitter and the Spark Connect server,
# so that Python, Java, Spark (pyspark's bundled distribution) and dprect are the same
# everywhere. No network is needed for Python packages: they come from a wheelhouse built
# on the host (`make wheelhouse`: .wheelhouse/, dprect's own wheel included).
#   make wheelhouse && docker compose up --build --abort-on-container-exit submit
# BASE_IMAGE: the upstream Python image where it can be pulled; else a Debian bookworm
# base with python3.11 and openjdk-17-jre-headless (tests/compose/compose_run.py builds
# one with debootstrap when no registry is reachable).
ARG BASE_IMAGE=python:3.11-slim-bookworm

# -- stage 1: the virtual environment, from the wheelhouse only ---------------------------
FROM ${BASE_IMAGE} AS venv
COPY .wheelhouse /wheels
RUN python3 -m venv /opt/dprect \
 && /opt/dprect/bin/pip install --no-cache-dir --no-index --find-links /wheels \
        'dprect[jobs,connect]'

# -- stage 2: the runtime (Java from Debian, the environment from stage 1) ----------------
FROM ${BASE_IMAGE}
RUN if ! command -v java >/dev/null 2>&1 || ! command -v ps >/dev/null 2>&1; then \
      apt-get update \
      && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
      && rm -rf /var/lib/apt/lists/*; \
    fi
COPY --from=venv /opt/dprect /opt/dprect

WORKDIR /app
COPY jobs ./jobs
COPY conf ./conf

# pyspark ships the Spark distribution: its bin/ has spark-class and spark-submit.
ENV SPARK_HOME=/opt/dprect/lib/python3.11/site-packages/pyspark \
    SPARK_CONF_DIR=/app/conf/spark \
    PYSPARK_PYTHON=/opt/dprect/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/dprect/bin/python \
    PYTHONHASHSEED=0
ENV PATH="/opt/dprect/bin:${SPARK_HOME}/bin:${PATH}"

RUN test -x "${SPARK_HOME}/bin/spark-submit" && java -version && dprect --version

CMD ["spark-submit", "--help"]
