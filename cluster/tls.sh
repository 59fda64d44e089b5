#!/usr/bin/env bash
# Certificates for a TLS-secured dask cluster: one CA, one key and certificate
# signed by it for the scheduler, workers and clients (give each role its own
# in production). Then only holders of a certificate signed by this CA can join.
#
#   cluster/tls.sh ./certs
#   dask scheduler --protocol tls --tls-ca-file certs/ca.pem --tls-cert certs/node.pem --tls-key certs/node.key
#   dask worker tls://HOST:8786 --tls-ca-file certs/ca.pem --tls-cert certs/node.pem --tls-key certs/node.key
#   export DASK_DISTRIBUTED__COMM__TLS__CA_FILE=certs/ca.pem
#   export DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT=certs/node.pem
#   export DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY=certs/node.key
#   export DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION=True
#   bigdr fit-transform data.zarr emb.zarr --scheduler tls://HOST:8786
set -euo pipefail
OUT="${1:-./certs}"
DAYS="${DAYS:-365}"
mkdir -p "$OUT"
umask 077
openssl req -x509 -newkey rsa:3072 -nodes -days "$DAYS" -subj "/CN=bigdr-dask-ca" \
    -keyout "$OUT/ca.key" -out "$OUT/ca.pem"
openssl req -newkey rsa:3072 -nodes -subj "/CN=bigdr-dask-node" -keyout "$OUT/node.key" -out "$OUT/node.csr"
openssl x509 -req -in "$OUT/node.csr" -CA "$OUT/ca.pem" -CAkey "$OUT/ca.key" -CAcreateserial -days "$DAYS" \
    -out "$OUT/node.pem"
rm -f "$OUT/node.csr"
echo "wrote $OUT/ca.pem, $OUT/node.pem, $OUT/node.key (keep ca.key offline)"
