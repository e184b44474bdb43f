# certs.sh - sourced by the TLS tests (test_security.sh, test_tls_reload.sh): test
# certificates in $dir made with openssl (its output in $dir/openssl.out).

# mkca NAME: a self-signed CA, $dir/NAME.crt and .key
mkca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$dir/$1.key" -out "$dir/$1.crt" -days 2 -subj "/CN=a2a test $1" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=keyCertSign,cRLSign" \
        >>"$dir/openssl.out" 2>&1
}

# mkcert NAME CA: a key and a certificate signed by CA for 127.0.0.1 and localhost, for servers
# and clients
mkcert() {
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$dir/$1.key" -out "$dir/$1.csr" -subj "/CN=localhost" >>"$dir/openssl.out" 2>&1 &&
        printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
            "keyUsage=digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth,clientAuth" \
            >"$dir/$1.ext" &&
        openssl x509 -req -in "$dir/$1.csr" -CA "$dir/$2.crt" -CAkey "$dir/$2.key" \
            -CAcreateserial -out "$dir/$1.crt" -days 2 -extfile "$dir/$1.ext" >>"$dir/openssl.out" 2>&1
}
