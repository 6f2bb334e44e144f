package mor.jvm;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFileSystem;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.hadoop.util.HadoopStreams;
import org.apache.parquet.io.DelegatingSeekableInputStream;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;

/**
 * A delete file as Parquet's reader opens it. A small one (most are: one data file's positions)
 * is read whole in one request and parsed from memory: opening it through a Hadoop stream costs
 * a footer read, a seek and a column read (three requests on object storage), more than the
 * file's own decoding. A local file is read past Hadoop's checksum layer, whose look-up of a
 * {@code .crc} beside each file cost more than the read (Iceberg's writers leave none).
 */
final class DeleteFileInput {
  /** Files up to this size are read whole; larger ones (shared by many data files) are streamed. */
  static final long WHOLE_FILE_BYTES = 4L << 20;

  private DeleteFileInput() {}

  /** A Parquet delete file ({@code length}: its size from the manifest, 0 when unknown). */
  static InputFile parquet(String file, long length, Configuration conf) throws IOException {
    Path path = new Path(file);
    FileSystem fs = fileSystem(path, conf);
    if (length <= 0) return HadoopInputFile.fromStatus(fs.getFileStatus(path), conf);
    if (length > WHOLE_FILE_BYTES) return new Sized(fs, path, length);
    return new InMemory(read(fs, path, 0, Math.toIntExact(length)));
  }

  /** {@code length} bytes at {@code offset} of a file (a deletion vector's blob in a Puffin file). */
  static byte[] range(String file, long offset, int length, Configuration conf) throws IOException {
    Path path = new Path(file);
    return read(fileSystem(path, conf), path, offset, length);
  }

  private static byte[] read(FileSystem fs, Path path, long offset, int length) throws IOException {
    byte[] bytes = new byte[length];
    if (fs instanceof RawLocalFileSystem) { // a local file: one positioned read, no Hadoop stream
      ByteBuffer into = ByteBuffer.wrap(bytes);
      try (FileChannel channel = FileChannel.open(((RawLocalFileSystem) fs).pathToFile(path).toPath())) {
        while (into.hasRemaining()) {
          if (channel.read(into, offset + into.position()) < 0) {
            throw new EOFException(path + " ends before byte " + (offset + length));
          }
        }
      }
      return bytes;
    }
    try (FSDataInputStream in = open(fs, path, offset + length)) { // the file is at least that long
      in.readFully(offset, bytes);
    }
    return bytes;
  }

  private static FileSystem fileSystem(Path path, Configuration conf) throws IOException {
    FileSystem fs = path.getFileSystem(conf);
    return fs instanceof ChecksumFileSystem ? ((ChecksumFileSystem) fs).getRawFileSystem() : fs;
  }

  /** Opened with the length the manifest gave: object stores (s3a) skip the HEAD that open() makes. */
  private static FSDataInputStream open(FileSystem fs, Path path, long length) throws IOException {
    CompletableFuture<FSDataInputStream> opening =
        fs.openFile(path).opt("fs.option.openfile.length", Long.toString(length)).build();
    try {
      return opening.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("opening " + path + " was interrupted");
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof IOException) throw (IOException) cause;
      throw new IOException("could not open " + path, cause);
    }
  }

  /** A file whose size the manifest gave, streamed. */
  private static final class Sized implements InputFile {
    private final FileSystem fs;
    private final Path path;
    private final long length;

    Sized(FileSystem fs, Path path, long length) {
      this.fs = fs;
      this.path = path;
      this.length = length;
    }

    @Override
    public long getLength() {
      return length;
    }

    @Override
    public SeekableInputStream newStream() throws IOException {
      return HadoopStreams.wrap(open(fs, path, length));
    }

    @Override
    public String toString() {
      return path.toString();
    }
  }

  /** A whole file's bytes. */
  private static final class InMemory implements InputFile {
    private final byte[] bytes;

    InMemory(byte[] bytes) {
      this.bytes = bytes;
    }

    @Override
    public long getLength() {
      return bytes.length;
    }

    @Override
    public SeekableInputStream newStream() {
      Bytes in = new Bytes(bytes);
      return new DelegatingSeekableInputStream(in) {
        @Override
        public long getPos() {
          return in.position();
        }

        @Override
        public void seek(long position) throws IOException {
          if (position < 0 || position > bytes.length) throw new IOException("seek to " + position + " in " + bytes.length + " bytes");
          in.moveTo((int) position);
        }
      };
    }
  }

  /** A byte array stream that can move: ByteArrayInputStream's position is its protected field. */
  private static final class Bytes extends ByteArrayInputStream {
    Bytes(byte[] bytes) {
      super(bytes);
    }

    int position() {
      return pos;
    }

    void moveTo(int position) {
      pos = position;
    }
  }
}
