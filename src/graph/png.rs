//! PNG: the SVG picture ([`super::svg::render`]) rasterised by resvg at its own size, on white,
//! so `graph --format png` and the console's download are the same picture as the SVG.
//!
//! The fonts are compiled in (Liberation Sans, Regular and Bold, under the SIL Open Font
//! License; `assets/fonts`): they have Arial's and Helvetica's metrics, which the SVG names and
//! the layout measures text for, and a PNG must not depend on the machine's fonts.

use resvg::tiny_skia::{Color, Pixmap, Transform};
use resvg::usvg::{fontdb, Options, Tree};
use std::sync::{Arc, OnceLock};

const REGULAR: &[u8] = include_bytes!("../../assets/fonts/LiberationSans-Regular.ttf");
const BOLD: &[u8] = include_bytes!("../../assets/fonts/LiberationSans-Bold.ttf");
/// The compiled-in fonts' family, given for Helvetica, Arial and sans-serif alike.
const FAMILY: &str = "Liberation Sans";
/// The largest PNG drawn: 40 million pixels take 160 MB while drawn (a 4,000-pixel-wide
/// picture 10,000 pixels tall); the SVG of a larger picture is the way to see it.
const MOST_PIXELS: u64 = 40_000_000;

/// Why a picture could not be made a PNG.
#[derive(Debug, thiserror::Error)]
pub enum PngError {
    /// The SVG did not parse (a bug: we wrote it).
    #[error("the picture's SVG does not parse: {0}")]
    Svg(#[from] resvg::usvg::Error),
    /// Its size is zero or too large for a PNG.
    #[error("the picture is {0} × {1} pixels, too large for a PNG (at most 40 million pixels; the SVG has no such limit)")]
    Size(u32, u32),
    /// The encoder failed.
    #[error("cannot encode the PNG: {0}")]
    Encode(String),
}

/// The PNG bytes of an SVG picture, one pixel per SVG unit.
pub fn render(svg: &str) -> Result<Vec<u8>, PngError> {
    let options = Options {
        font_family: FAMILY.into(),
        fontdb: fonts(),
        ..Options::default()
    };
    let tree = Tree::from_str(svg, &options)?;
    let size = tree.size().to_int_size();
    if u64::from(size.width()) * u64::from(size.height()) > MOST_PIXELS {
        return Err(PngError::Size(size.width(), size.height()));
    }
    let mut pixmap = Pixmap::new(size.width(), size.height())
        .ok_or(PngError::Size(size.width(), size.height()))?;
    pixmap.fill(Color::WHITE);
    resvg::render(&tree, Transform::identity(), &mut pixmap.as_mut());
    pixmap
        .encode_png()
        .map_err(|e| PngError::Encode(e.to_string()))
}

/// The compiled-in fonts, loaded once.
fn fonts() -> Arc<fontdb::Database> {
    static FONTS: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = fontdb::Database::new();
            db.load_font_data(REGULAR.to_vec());
            db.load_font_data(BOLD.to_vec());
            db.set_sans_serif_family(FAMILY);
            Arc::new(db)
        })
        .clone()
}
