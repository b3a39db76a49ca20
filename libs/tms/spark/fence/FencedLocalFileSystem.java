package tms.fence;

import java.io.IOException;
import java.net.URI;
import java.util.EnumSet;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;

/** Hadoop's local file system, with deletes, renames and writes held to {@link Fence}'s roots. */
public class FencedLocalFileSystem extends LocalFileSystem {
  private Fence.Root[] confRoots;

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
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
      boolean overwrite, int bufferSize, short replication, long blockSize,
      Progressable progress) throws IOException {
    Fence.checkWrite("write", makeQualified(f), confRoots);
    return super.createNonRecursive(f, permission, overwrite, bufferSize, replication, blockSize,
        progress);
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

  @Override
  protected void rename(Path src, Path dst, org.apache.hadoop.fs.Options.Rename... options)
      throws IOException {
    Fence.check("rename", makeQualified(src), confRoots);
    Fence.checkWrite("rename to", makeQualified(dst), confRoots);
    super.rename(src, dst, options);
  }

  @Override
  public void createSymlink(Path target, Path link, boolean createParent) throws IOException {
    Fence.checkWrite("symlink", makeQualified(link), confRoots);
    super.createSymlink(target, link, createParent);
  }
}
