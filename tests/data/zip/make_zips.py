"""Makes the zip fixtures of tools/zip_reader_test.cpp with Python's zipfile (the writer that
makes wheels): the same members stored and deflated, plus an archive comment.

    python3 tests/data/zip/make_zips.py   # rewrites tests/data/zip/*.zip

Member contents follow rules the C++ test repeats: hello.txt is a fixed line, empty.txt is
empty, and dir/big.bin holds N bytes where byte i is (i * 7 + i // 4096) % 251: N is 3 MiB when
deflated (more than one 1 MiB inflate step, still small once compressed), 5000 when stored.
"""
import pathlib
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
STAMP = (2024, 1, 1, 0, 0, 0)  # fixed, so the files are byte-for-byte reproducible


def big(n: int) -> bytes:
    return bytes((i * 7 + i // 4096) % 251 for i in range(n))


def members(n: int):
    return [("hello.txt", b"hello from zipfile\n"), ("empty.txt", b""), ("dir/big.bin", big(n))]


def write(name: str, method: int, n: int, comment: bytes = b"") -> None:
    with zipfile.ZipFile(HERE / name, "w") as z:
        for path, data in members(n):
            info = zipfile.ZipInfo(path, STAMP)
            info.compress_type = method
            z.writestr(info, data)
        z.comment = comment


if __name__ == "__main__":
    write("stored.zip", zipfile.ZIP_STORED, 5000)
    write("deflated.zip", zipfile.ZIP_DEFLATED, 3 << 20, comment=b"made by tests/data/zip/make_zips.py")
