"""A real OpenLDAP directory for the tests of the directory sign-in (auth.ldap_*): Debian's
`slapd` started as a child process on 127.0.0.1 at a free port, from a slapd.conf-style config
in a temporary folder (an mdb database, the memberOf overlay), loaded with the people and nested
groups of tests/data/ldap/directory.ldif, stopped and removed at the end. Tests skip, saying why,
when slapd is absent (scripts/install_ldap.sh installs it); under KB_REQUIRE_SYSTEM_DEPS=1 (CI)
they fail.

slapd runs with `-d stats`: every search it answers is in `RunningLdap.log()`, so a test can
check which filter reached the directory.

    def test_x(ldap_directory): ldap_directory.url -> "ldap://127.0.0.1:P"
    def test_y(ldap_tls_directory): ldap_tls_directory.ldaps_url, .ca_file
        ldap_directory.move("hanna", "hr", "finance")   # memberOf follows (the overlay)
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from devtools.ports import free_port
from devtools.system_deps import skip_or_fail

READY_TIMEOUT_S = 20.0
SUFFIX = "dc=example,dc=org"
ADMIN_DN = f"cn=admin,{SUFFIX}"
ADMIN_PASSWORD = "admin-secret"
READER_DN = f"cn=kb-reader,ou=services,{SUFFIX}"
READER_PASSWORD = "reader-secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
LDIF = Path(__file__).resolve().parents[1] / "tests" / "data" / "ldap" / "directory.ldif"

CONFIG = """\
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
pidfile {folder}/slapd.pid
argsfile {folder}/slapd.args
database mdb
suffix "{suffix}"
rootdn "{admin}"
rootpw {password}
directory {folder}/data
maxsize 104857600
overlay memberof
{tls}access to attrs=userPassword by self write by anonymous auth by * none
access to * by users read by anonymous auth
"""


def slapd_binary() -> Path | None:
    found = shutil.which("slapd") or ("/usr/sbin/slapd" if Path("/usr/sbin/slapd").exists()
                                      else None)
    return Path(found) if found else None


class Unavailable(Exception):
    """slapd cannot be started here; the message says why and what to install."""


TLS_CONFIG = """\
TLSCACertificateFile {folder}/ca.pem
TLSCertificateFile {folder}/server.pem
TLSCertificateKeyFile {folder}/server.key
"""


def make_certificates(folder: Path, name: str = "ca") -> Path:
    """A throwaway CA (`<name>.pem`) and, for the first, a server certificate for 127.0.0.1
    signed by it (server.pem, server.key), with openssl; the CA file's path."""
    if shutil.which("openssl") is None:
        raise Unavailable("openssl is not installed (Debian package openssl)")

    def run(*args: str) -> None:
        done = subprocess.run(["openssl", *args], cwd=folder, capture_output=True, text=True,
                              timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"openssl {args[0]} failed: {done.stderr[-1000:]}")

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
        f"{name}.pem", "-days", "2", "-subj", f"/CN=kb test {name}")
    if name == "ca":
        (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
            "server.csr", "-subj", "/CN=127.0.0.1")
        run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
    return folder / f"{name}.pem"


@dataclass
class RunningLdap:
    host: str
    port: int
    log_path: Path
    process: subprocess.Popen[bytes]
    tls_port: int = 0  # ldaps://, with tls=True
    ca_file: Path | None = None  # the CA that signed the server's certificate, with tls=True

    @property
    def url(self) -> str:
        return f"ldap://{self.host}:{self.port}"

    @property
    def ldaps_url(self) -> str:
        return f"ldaps://{self.host}:{self.tls_port}"

    def log(self) -> str:
        """What slapd has logged so far (`-d stats`: each bind and search with its filter)."""
        return self.log_path.read_text(errors="replace")

    @contextmanager
    def admin(self) -> Iterator[Any]:
        """An ldap3 connection bound as the directory's root, for a test's changes."""
        import ldap3

        conn = ldap3.Connection(ldap3.Server(self.url, get_info=ldap3.NONE), ADMIN_DN,
                                ADMIN_PASSWORD, auto_bind=True, raise_exceptions=True)
        try:
            yield conn
        finally:
            conn.unbind()

    def person(self, uid: str) -> str:
        return f"uid={uid},{PEOPLE}"

    def group(self, cn: str) -> str:
        return f"cn={cn},{GROUPS}"

    def move(self, uid: str, leave: str, join: str) -> None:
        """`uid` leaves group `leave` and joins group `join`."""
        import ldap3

        with self.admin() as conn:
            conn.modify(self.group(leave), {"member": [(ldap3.MODIFY_DELETE, [self.person(uid)])]})
            conn.modify(self.group(join), {"member": [(ldap3.MODIFY_ADD, [self.person(uid)])]})

    def set_attribute(self, uid: str, name: str, values: list[str]) -> None:
        import ldap3

        with self.admin() as conn:
            conn.modify(self.person(uid), {name: [(ldap3.MODIFY_REPLACE, values)]})

    def add_person(self, uid: str, password: str, groups: list[str] = ()) -> None:  # type: ignore[assignment]
        import ldap3

        with self.admin() as conn:
            conn.add(self.person(uid), ["inetOrgPerson"],
                     {"cn": uid, "sn": uid, "uid": uid, "userPassword": password})
            for cn in groups:
                conn.modify(self.group(cn), {"member": [(ldap3.MODIFY_ADD, [self.person(uid)])]})

    def remove_person(self, uid: str) -> None:
        with self.admin() as conn:
            conn.delete(self.person(uid))


def _load(url: str, ldif: str) -> None:
    """Add the entries of `ldif` (blank-line separated, `attr: value` lines) as the root, so
    the memberOf overlay sees each group's members."""
    import ldap3

    conn = ldap3.Connection(ldap3.Server(url, get_info=ldap3.NONE), ADMIN_DN, ADMIN_PASSWORD,
                            auto_bind=True, raise_exceptions=True)
    try:
        for block in ldif.strip().split("\n\n"):
            attributes: dict[str, list[str]] = {}
            for line in block.splitlines():
                if line.startswith("#") or not line.strip():
                    continue
                key, _, value = line.partition(":")
                attributes.setdefault(key.strip(), []).append(value.strip())
            if "dn" not in attributes:
                continue
            dn = attributes.pop("dn")[0]
            conn.add(dn, attributes.pop("objectClass"), attributes)
    finally:
        conn.unbind()


def _wait_ready(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"slapd exited ({process.returncode}):\n{log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"slapd did not listen within {READY_TIMEOUT_S:.0f} s")


@contextmanager
def throwaway_directory(ldif: Path = LDIF, tls: bool = False) -> Iterator[RunningLdap]:
    """slapd on 127.0.0.1 with `ldif` loaded (with `tls`, also LDAPS and StartTLS with a
    throwaway CA); stopped and removed at the end."""
    binary = slapd_binary()
    if binary is None:
        raise Unavailable("OpenLDAP's slapd not found: run scripts/install_ldap.sh (Debian "
                          "packages slapd and ldap-utils)")
    try:
        import ldap3  # noqa: F401
    except ImportError as exc:
        raise Unavailable("ldap3 is not installed: pip install ldap3") from exc
    folder = Path(tempfile.mkdtemp(prefix="kb-ldap-"))
    (folder / "data").mkdir()
    ca_file = make_certificates(folder) if tls else None
    (folder / "slapd.conf").write_text(CONFIG.format(
        folder=folder, suffix=SUFFIX, admin=ADMIN_DN, password=ADMIN_PASSWORD,
        tls=TLS_CONFIG.format(folder=folder) if tls else ""))
    port, tls_port = free_port(), free_port() if tls else 0
    urls = f"ldap://127.0.0.1:{port}/" + (f" ldaps://127.0.0.1:{tls_port}/" if tls else "")
    log_path = folder / "slapd.log"
    log: IO[bytes] = log_path.open("wb")
    process = subprocess.Popen(
        [str(binary), "-f", str(folder / "slapd.conf"), "-h", urls,
         "-d", "stats"], stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_ready(port, process, log_path)
        _load(f"ldap://127.0.0.1:{port}", ldif.read_text(encoding="utf-8"))
        yield RunningLdap("127.0.0.1", port, log_path, process, tls_port, ca_file)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def ldap_directory() -> Iterator[RunningLdap]:
    yield from _fixture(tls=False)


@pytest.fixture(scope="session")
def ldap_tls_directory() -> Iterator[RunningLdap]:
    """The same directory, also on LDAPS and with StartTLS, its certificate from a throwaway
    CA (`ca_file`)."""
    yield from _fixture(tls=True)


def _fixture(tls: bool) -> Iterator[RunningLdap]:
    try:
        with throwaway_directory(tls=tls) as running:
            yield running
    except Unavailable as exc:
        skip_or_fail(str(exc))
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
