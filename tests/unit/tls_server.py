"""An HTTPS server on 127.0.0.1 whose certificate names one host name and no address, for the TLS name checks of
the modules' client and of the event source; it answers every GET with an empty JSON list. And an HTTP CONNECT
proxy, as HTTPS_PROXY names one."""

import contextlib
import datetime
import http.server
import socket
import ssl
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _issue(subject, key, issuer_key, ca, names=()):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'test CA')]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        # Key identifiers, as Nomad's own certificates (Go's x509) have them: Python 3.13's default context
        # (VERIFY_X509_STRICT) refuses a certificate with no Authority Key Identifier.
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    )
    if ca:
        usage = dict.fromkeys(('content_commitment', 'key_encipherment', 'data_encipherment', 'key_agreement'), False)
        usage.update(encipher_only=False, decipher_only=False)
        builder = builder.add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, **usage), critical=True
        )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), False)
    return builder.sign(issuer_key, hashes.SHA256())


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.end_headers()
        self.wfile.write(b'[]')

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def https_server_named(name, workdir):
    """(address, CA file) of a server whose certificate, from a CA of its own, names name alone, as an agent's
    certificate with no -additional-* names reached by an address."""
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    (workdir / 'ca.pem').write_bytes(_issue('test CA', ca_key, ca_key, True).public_bytes(serialization.Encoding.PEM))
    cert = _issue(name, key, ca_key, False, [name])
    (workdir / 'cert.pem').write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (workdir / 'key.pem').write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(workdir / 'cert.pem'), str(workdir / 'key.pem'))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield 'https://127.0.0.1:%d' % server.server_port, str(workdir / 'ca.pem')
    finally:
        server.shutdown()
        server.server_close()


def _pipe(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def connect_proxy():
    """(address, the CONNECT targets it was asked for) of a proxy that tunnels each CONNECT to its target."""
    asked = []
    listener = socket.create_server(('127.0.0.1', 0))

    def serve():
        while True:
            try:
                client = listener.accept()[0]
            except OSError:
                return
            head = b''
            while b'\r\n\r\n' not in head:
                head += client.recv(4096)
            target = head.split(b' ')[1].decode()
            asked.append(target)
            host, port = target.rsplit(':', 1)
            upstream = socket.create_connection((host, int(port)))
            client.sendall(b'HTTP/1.1 200 Connection established\r\n\r\n')
            threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield 'http://127.0.0.1:%d' % listener.getsockname()[1], asked
    finally:
        listener.close()
