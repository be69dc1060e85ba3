# One image for the Spark master, the workers and the submitter, so that Python, Java,
# Spark (pyspark's bundled distribution) and dprect are the same everywhere.
#   docker compose up --build      # master, two workers, and a submit service (generate + fit)
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY dprect ./dprect
# the jobs' extra: pyspark (and pandas), deltalake, matplotlib, pyyaml
RUN pip install --no-cache-dir '.[jobs]'

COPY jobs ./jobs
COPY conf ./conf

# pyspark ships the Spark distribution: its bin/ has spark-class and spark-submit.
ENV SPARK_HOME=/usr/local/lib/python3.11/site-packages/pyspark \
    SPARK_CONF_DIR=/app/conf/spark \
    PYSPARK_PYTHON=python3 \
    PYSPARK_DRIVER_PYTHON=python3 \
    PYTHONHASHSEED=0
ENV PATH="${SPARK_HOME}/bin:${PATH}"

RUN test -x "${SPARK_HOME}/bin/spark-submit" && java -version

CMD ["spark-submit", "--help"]
