//! The plot's own text: glyph by glyph, each at its side bearing. plotters
//! 0.3.7 lays ab_glyph glyphs out without the bearing, so a narrow glyph
//! such as '1' drifts left ("udp1 0.0.0.1:1 0000"); the names, legends and
//! captions are drawn with this instead.

use std::sync::OnceLock;

use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
use plotters::element::{Drawable, PointCollection};
use plotters::style::{Color, RGBColor};
use plotters_backend::{BackendCoord, DrawingBackend, DrawingErrorKind};

/// The font's bytes, read once for the process's life.
static FONT: OnceLock<FontRef<'static>> = OnceLock::new();

/// Takes the font (plotters registers the same bytes for its axes).
pub fn set_font(bytes: &'static [u8]) -> Result<(), ab_glyph::InvalidFont> {
    let font = FontRef::try_from_slice(bytes)?;
    let _ = FONT.set(font);
    Ok(())
}

/// A line of text whose top left corner is at `at`.
pub struct Label {
    pub at: (i32, i32),
    pub text: String,
    pub size: f32,
    pub colour: RGBColor,
}

impl Label {
    pub fn new(at: (i32, i32), text: impl Into<String>, size: f32) -> Label {
        Label { at, text: text.into(), size, colour: RGBColor(0, 0, 0) }
    }
}

/// Pixels `text` takes across at `size`.
pub fn width(text: &str, size: f32) -> i32 {
    let Some(font) = FONT.get() else { return 0 };
    let scaled = font.as_scaled(PxScale::from(size));
    text.chars().map(|c| scaled.h_advance(scaled.glyph_id(c))).sum::<f32>().ceil() as i32
}

impl<'a> PointCollection<'a, (i32, i32)> for &'a Label {
    type Point = &'a (i32, i32);
    type IntoIter = std::iter::Once<&'a (i32, i32)>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<DB: DrawingBackend> Drawable<DB> for Label {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let (Some((x, y)), Some(font)) = (pos.next(), FONT.get()) else { return Ok(()) };
        let scaled = font.as_scaled(PxScale::from(self.size));
        let baseline = y as f32 + scaled.ascent();
        let (mut pen, mut previous) = (x as f32, None);
        for c in self.text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(previous) = previous {
                pen += scaled.kern(previous, id);
            }
            let glyph = id.with_scale_and_position(self.size, point(pen, baseline));
            if let Some(outline) = scaled.outline_glyph(glyph) {
                let corner = outline.px_bounds().min;
                let mut drawn = Ok(());
                outline.draw(|gx, gy, coverage| {
                    if drawn.is_ok() && coverage > 0.0 {
                        let at = (corner.x as i32 + gx as i32, corner.y as i32 + gy as i32);
                        drawn =
                            backend.draw_pixel(at, self.colour.mix(f64::from(coverage)).to_backend_color());
                    }
                });
                drawn?;
            }
            pen += scaled.h_advance(id);
            previous = Some(id);
        }
        Ok(())
    }
}
