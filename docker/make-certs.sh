#!/usr/bin/env bash
# make-certs.sh [DIR] [HOST...] - a private CA and one certificate, signed by
# it, for the cluster's hosts (default: coordinator node-a node-b localhost
# 127.0.0.1), into DIR (default ./tls): ca.crt, node.crt, node.key. Every
# process of the cluster presents node.crt and trusts only ca.crt, so a peer
# with a certificate from any other CA is refused. Keep ca.key offline.
set -euo pipefail
dir=${1:-./tls}
shift || true
hosts=("$@")
[ "${#hosts[@]}" -gt 0 ] || hosts=(coordinator node-a node-b localhost 127.0.0.1)
san=""
for h in "${hosts[@]}"; do
    if [[ $h =~ ^[0-9.]+$ ]]; then san+="IP:$h,"; else san+="DNS:$h,"; fi
done
san=${san%,}
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -days 825 -subj "/CN=a2a cluster CA" \
    -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=a2a node" -keyout node.key -out node.csr \
    2>/dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >node.ext
openssl x509 -req -in node.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 \
    -extfile node.ext -out node.crt 2>/dev/null
rm -f node.csr node.ext ca.srl
chmod 600 node.key ca.key
echo "made $dir/ca.crt and $dir/node.crt ($san); keep $dir/ca.key somewhere safe"
