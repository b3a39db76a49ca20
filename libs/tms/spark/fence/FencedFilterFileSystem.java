package tms.fence;

import java.io.IOException;
import java.net.URI;
import java.util.EnumSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.apache.hadoop.util.ReflectionUtils;

/**
 * Any other Hadoop file system (HDFS, GCS, Azure, OSS) behind {@link Fence}: the real one is
 * created from the class the Hadoop conf key {@code tms.fence.inner.<scheme>.impl} names and
 * every delete, rename and write passes the fence first. A wrapper rather than a subclass, so
 * one class serves every connector without compiling against it, from the JVM's own class path.
 *
 * <p>A filter hands most calls straight to the file system it wraps, so every door that
 * changes a file is overridden here, not only the ones its superclass routes through
 * {@code create}.
 */
public class FencedFilterFileSystem extends FilterFileSystem {
  public static final String INNER_PREFIX = "tms.fence.inner.";
  private Fence.Root[] confRoots;

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    String scheme = name.getScheme() == null ? "" : name.getScheme();
    String key = INNER_PREFIX + scheme + ".impl";
    String className = conf.getTrimmed(key, "");
    if (className.isEmpty() || className.equals(getClass().getName())) {
      throw new IOException("TMS fence: no file system to wrap for " + scheme + ": set " + key);
    }
    Class<?> cls;
    try {
      cls = conf.getClassByName(className);
    } catch (ClassNotFoundException e) {
      throw new IOException("TMS fence: the file system class " + className + " for " + scheme
          + ": is not on the class path (" + key + ")", e);
    }
    if (!FileSystem.class.isAssignableFrom(cls)) {
      throw new IOException("TMS fence: " + className + " (" + key + ") is not a file system");
    }
    FileSystem inner = (FileSystem) ReflectionUtils.newInstance(cls, conf);
    inner.initialize(name, conf);
    this.fs = inner;
    super.initialize(name, conf);
    confRoots = Fence.fromConf(conf);
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    Fence.check("delete", makeQualified(f), confRoots);
    return super.delete(f, recursive);
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    Fence.check("rename", makeQualified(src), confRoots);
    Fence.checkWrite("rename to", makeQualified(dst), confRoots);
    return super.rename(src, dst);
  }

  @Override
  protected void rename(Path src, Path dst, org.apache.hadoop.fs.Options.Rename... options)
      throws IOException {
    Fence.check("rename", makeQualified(src), confRoots);
    Fence.checkWrite("rename to", makeQualified(dst), confRoots);
    super.rename(src, dst, options);
  }

  @Override
  public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite,
      int bufferSize, short replication, long blockSize, Progressable progress)
      throws IOException {
    Fence.checkWrite("write", makeQualified(f), confRoots);
    return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
  }

  @Override
  public FSDataOutputStream create(Path f, FsPermission permission, EnumSet<CreateFlag> flags,
      int bufferSize, short replication, long blockSize, Progressable progress,
      org.apache.hadoop.fs.Options.ChecksumOpt checksumOpt) throws IOException {
    Fence.checkWrite("write", makeQualified(f), confRoots);
    return super.create(f, permission, flags, bufferSize, replication, blockSize, progress,
        checksumOpt);
  }

  @Override
  public FSDataOutputStream createNonRecursive(Path f, FsPermission permission,
      EnumSet<CreateFlag> flags, int bufferSize, short replication, long blockSize,
      Progressable progress) throws IOException {
    Fence.checkWrite("write", makeQualified(f), confRoots);
    return super.createNonRecursive(f, permission, flags, bufferSize, replication, blockSize,
        progress);
  }

  @Override
  public FSDataOutputStream append(Path f, int bufferSize, Progressable progress)
      throws IOException {
    Fence.checkWrite("write", makeQualified(f), confRoots);
    return super.append(f, bufferSize, progress);
  }

  /** The wrapped file system's builder would reach it directly: built here, through create. */
  @Override
  public org.apache.hadoop.fs.FSDataOutputStreamBuilder createFile(Path path) {
    return createDataOutputStreamBuilder(this, path).create().overwrite(true);
  }

  /** As {@link #createFile}: built here, through {@link #append}. */
  @Override
  public org.apache.hadoop.fs.FSDataOutputStreamBuilder appendFile(Path path) {
    return createDataOutputStreamBuilder(this, path).append();
  }

  @Override
  public boolean truncate(Path f, long newLength) throws IOException {
    Fence.checkWrite("truncate", makeQualified(f), confRoots);
    return super.truncate(f, newLength);
  }

  @Override
  public void concat(Path trg, Path[] psrcs) throws IOException {
    Fence.checkWrite("concat", makeQualified(trg), confRoots);
    for (Path src : psrcs) {
      Fence.check("concat", makeQualified(src), confRoots);
    }
    super.concat(trg, psrcs);
  }

  @Override
  public void createSymlink(Path target, Path link, boolean createParent) throws IOException {
    Fence.checkWrite("symlink", makeQualified(link), confRoots);
    super.createSymlink(target, link, createParent);
  }

  @Override
  public Path createSnapshot(Path path, String snapshotName) throws IOException {
    Fence.checkAll("snapshot", makeQualified(path), confRoots);
    return super.createSnapshot(path, snapshotName);
  }

  @Override
  public void renameSnapshot(Path path, String from, String to) throws IOException {
    Fence.checkAll("snapshot rename", makeQualified(path), confRoots);
    super.renameSnapshot(path, from, to);
  }

  @Override
  public void deleteSnapshot(Path path, String snapshotName) throws IOException {
    Fence.checkAll("snapshot delete", makeQualified(path), confRoots);
    super.deleteSnapshot(path, snapshotName);
  }

  @Override
  public org.apache.hadoop.fs.MultipartUploaderBuilder createMultipartUploader(Path basePath)
      throws IOException {
    Fence.checkAll("multipart upload", makeQualified(basePath), confRoots);
    return super.createMultipartUploader(basePath);
  }

  @Override
  public void copyFromLocalFile(boolean delSrc, Path src, Path dst) throws IOException {
    Fence.checkCopyIn(this, delSrc, new Path[] {src}, dst, confRoots);
    super.copyFromLocalFile(delSrc, src, dst);
  }

  @Override
  public void copyFromLocalFile(boolean delSrc, boolean overwrite, Path src, Path dst)
      throws IOException {
    Fence.checkCopyIn(this, delSrc, new Path[] {src}, dst, confRoots);
    super.copyFromLocalFile(delSrc, overwrite, src, dst);
  }

  @Override
  public void copyFromLocalFile(boolean delSrc, boolean overwrite, Path[] srcs, Path dst)
      throws IOException {
    Fence.checkCopyIn(this, delSrc, srcs, dst, confRoots);
    super.copyFromLocalFile(delSrc, overwrite, srcs, dst);
  }

  @Override
  public void copyToLocalFile(boolean delSrc, Path src, Path dst) throws IOException {
    Fence.checkCopyOut(this, delSrc, src, dst, confRoots);
    super.copyToLocalFile(delSrc, src, dst);
  }

  @Override
  public void copyToLocalFile(boolean delSrc, Path src, Path dst, boolean useRawLocalFileSystem)
      throws IOException {
    Fence.checkCopyOut(this, delSrc, src, dst, confRoots);
    super.copyToLocalFile(delSrc, src, dst, useRawLocalFileSystem);
  }
}
