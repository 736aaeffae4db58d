// The fonts attnviz ships (resources/fonts: DejaVu Sans and DejaVu Sans Mono, unchanged) and the
// switch that makes every window draw with them: pictures compared pixel by pixel (the user's
// guide's, test_tour) and what the GUI tests measure then come out the same on every machine,
// whatever fonts it has installed.
#pragma once

namespace attnviz::gui {

// The application font becomes the bundled DejaVu Sans at 9 points, and "monospace" (the
// explanations' code) the bundled DejaVu Sans Mono. Call after the QApplication is made and before
// the windows are. False when the bundled fonts cannot be registered.
bool usePinnedFonts();

}  // namespace attnviz::gui
